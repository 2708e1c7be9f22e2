// MiniWeb page script: reports what the user does (the recorder stream) and copies (the clipboard stream),
// auto-submits filters, and runs the gestures (board drag, signature pad, slider value).
(function () {
  "use strict";
  var site = document.body.dataset.site || "";
  var csrf = document.body.dataset.csrf || "";
  function send(path, obj) {
    var body = JSON.stringify(obj);
    if (navigator.sendBeacon && navigator.sendBeacon(path, new Blob([body], {type: "text/plain"}))) return;
    fetch(path, {method: "POST", body: body, keepalive: true, credentials: "same-origin"}).catch(function () {});
  }
  function describe(el) {
    if (!el || !el.tagName) return null;
    var ctl = el.closest("[data-control-id]");
    var label = el.getAttribute("aria-label") || "";
    if (!label && el.id) { var l = document.querySelector('label[for="' + el.id + '"]'); if (l) label = l.innerText.trim(); }
    if (!label && el.closest("label")) label = el.closest("label").innerText.trim();
    return {tag: el.tagName.toLowerCase(), control_id: ctl ? ctl.dataset.controlId : null,
            part: ctl ? (ctl.dataset.part || null) : null, value_attr: ctl ? (ctl.dataset.value || null) : null,
            id: el.id || null, name: el.getAttribute("name"), type: el.getAttribute("type"),
            text: (el.innerText || el.value || "").trim().slice(0, 80), href: el.getAttribute("href"), label: label.slice(0, 80)};
  }
  function record(type, el, extra) {
    var ev = {type: type, url: location.href, target: describe(el)};
    for (var k in extra || {}) ev[k] = extra[k];
    send("/_admin/record", ev);
  }
  record("load", document.body);
  document.addEventListener("click", function (e) { record("click", e.target); }, true);
  document.addEventListener("change", function (e) {
    var el = e.target;
    if (el.tagName === "SELECT") record("select", el, {value: el.value, text: el.options[el.selectedIndex] ? el.options[el.selectedIndex].text : ""});
    else if (el.type === "checkbox" || el.type === "radio") record("input", el, {value: el.checked ? el.value : "", checked: el.checked});
    else if (el.type === "file") record("input", el, {value: Array.prototype.map.call(el.files, function (f) { return f.name; }).join(",")});
    else if (el.type !== "password") record("input", el, {value: el.value});
    if (el.hasAttribute("data-autosubmit") && el.form) el.form.submit();
  }, true);
  document.addEventListener("submit", function (e) { record("submit", e.target); }, true);
  document.addEventListener("copy", function () {
    var t = String(window.getSelection() || "");
    if (t) { send("/_admin/clipboard", {site: site, text: t, control_id: ""}); record("copy", document.activeElement, {value: t}); }
  });
  // copy buttons
  document.querySelectorAll("[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var text = b.dataset.copy;
      var done = function () { b.textContent = "Copied"; };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, done); else done();
      send("/_admin/clipboard", {site: site, text: text, control_id: b.dataset.controlId || ""});
      record("copy", b, {value: text});
    });
  });
  // slider: show the value while it moves
  document.querySelectorAll('input[type=range]').forEach(function (r) {
    var out = document.querySelector('output[for="' + r.id + '"]');
    r.addEventListener("input", function () { if (out) out.textContent = r.value; });
  });
  // board: pointer-driven drag, so any mouse press-move-release (a person, CDP, Playwright) moves a card
  document.querySelectorAll(".board").forEach(function (board) {
    var drag = null;
    board.addEventListener("pointerdown", function (e) {
      var card = e.target.closest(".card.draggable");
      if (!card) return;
      e.preventDefault();
      drag = {card: card, x: e.clientX, y: e.clientY};
      card.classList.add("dragging");
    });
    document.addEventListener("pointermove", function (e) {
      if (!drag) return;
      drag.card.style.transform = "translate(" + (e.clientX - drag.x) + "px," + (e.clientY - drag.y) + "px)";
    });
    document.addEventListener("pointerup", function (e) {
      if (!drag) return;
      var card = drag.card; drag = null;
      card.style.transform = ""; card.classList.remove("dragging");
      card.style.visibility = "hidden";
      var under = document.elementFromPoint(e.clientX, e.clientY);
      card.style.visibility = "";
      var col = under && under.closest(".column");
      if (!col) return;
      var cards = Array.prototype.filter.call(col.querySelectorAll(".card.draggable"), function (c) { return c !== card; });
      var pos = cards.length;
      for (var i = 0; i < cards.length; i++) { var r = cards[i].getBoundingClientRect(); if (e.clientY < r.top + r.height / 2) { pos = i; break; } }
      record("drag", card, {to: {column: col.dataset.value, position: pos, target: describe(under)}});
      var form = new URLSearchParams({id: card.dataset.value, group: col.dataset.value, position: String(pos), csrf_token: csrf});
      fetch(board.dataset.moveUrl, {method: "POST", body: form, credentials: "same-origin"}).then(function () { location.reload(); });
    });
  });
  // signature pad: strokes of canvas points into the hidden field
  document.querySelectorAll("canvas.pad").forEach(function (pad) {
    var form = pad.closest("form"), field = form.querySelector('input[name=strokes]');
    var ctx = pad.getContext("2d"), strokes = [], cur = null;
    function pt(e) { var r = pad.getBoundingClientRect(); return [Math.round((e.clientX - r.left) * pad.width / r.width), Math.round((e.clientY - r.top) * pad.height / r.height)]; }
    pad.addEventListener("pointerdown", function (e) { e.preventDefault(); cur = [pt(e)]; ctx.beginPath(); ctx.moveTo(cur[0][0], cur[0][1]); });
    pad.addEventListener("pointermove", function (e) { if (!cur) return; var p = pt(e); cur.push(p); ctx.lineTo(p[0], p[1]); ctx.stroke(); });
    function end() { if (!cur) return; if (cur.length > 1) strokes.push(cur); record("draw", pad, {points: cur.length}); cur = null; field.value = JSON.stringify(strokes); }
    pad.addEventListener("pointerup", end); pad.addEventListener("pointerleave", end);
    var clear = form.querySelector('[data-part=clear]');
    if (clear) clear.addEventListener("click", function () { strokes = []; field.value = "[]"; ctx.clearRect(0, 0, pad.width, pad.height); });
  });
})();
