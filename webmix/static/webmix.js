// MiniWeb page script: copy buttons, auto-submitted filters, and the gestures (board drag, signature pad, slider
// value). What the user does is recorded by the harness outside the page's reach, never by this script.
(function () {
  "use strict";
  var csrf = document.body.dataset.csrf || "";
  document.addEventListener("change", function (e) {
    var el = e.target;
    if (el.hasAttribute("data-autosubmit") && el.form) el.form.submit();
  }, true);
  // copy buttons
  document.querySelectorAll("[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var done = function () { b.textContent = "Copied"; };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(b.dataset.copy).then(done, done); else done();
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
    function end() { if (!cur) return; if (cur.length > 1) strokes.push(cur); cur = null; field.value = JSON.stringify(strokes); }
    pad.addEventListener("pointerup", end); pad.addEventListener("pointerleave", end);
    var clear = form.querySelector('[data-part=clear]');
    if (clear) clear.addEventListener("click", function () { strokes = []; field.value = "[]"; ctx.clearRect(0, 0, pad.width, pad.height); });
  });
})();
document.addEventListener("click", function (e) {      // a variant's banner or promotion goes when dismissed (world.variants)
  var b = e.target.closest && e.target.closest("[data-dismiss]");
  if (!b) return;
  e.preventDefault();
  b.parentElement.remove();
});
document.addEventListener("click", function (e) {      // a modal dialog: its opener shows it, its Cancel closes it
  var opener = e.target.closest && e.target.closest("[data-opens]");
  if (opener) { var d = document.getElementById(opener.dataset.opens); if (d && d.showModal) d.showModal(); return; }
  var closer = e.target.closest && e.target.closest("[data-closes]");
  if (closer) { var dlg = closer.closest("dialog"); if (dlg) dlg.close(); }
});
