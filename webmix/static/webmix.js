// MiniWeb page script: copy buttons, auto-submitted filters, and the gestures (board drag, signature pad, slider
// value). What the user does is recorded by the harness outside the page's reach, never by this script.
(function () {
  "use strict";
  var csrf = document.body.dataset.csrf || "";
  document.addEventListener("change", function (e) {
    var el = e.target;
    if (el.hasAttribute("data-autosubmit") && el.form) el.form.submit();
  }, true);
  // copy buttons (one listener for the page, so rows a Load more adds copy too)
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-copy]");
    if (!b) return;
    var done = function () { b.textContent = "Copied"; };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(b.dataset.copy).then(done, done); else done();
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
document.addEventListener("click", function (e) {      // Load more: the next rows below the ones shown, the URL in step
  var a = e.target.closest && e.target.closest("a[data-more]");
  if (!a) return;
  e.preventDefault();
  if (a.getAttribute("aria-busy")) return;
  a.setAttribute("aria-busy", "true");
  fetch(a.href, {credentials: "same-origin"}).then(function (r) { return r.text(); }).then(function (html) {
    var next = new DOMParser().parseFromString(html, "text/html").querySelector("section.results");
    var now = document.querySelector("section.results");
    if (!next || !now) { location.href = a.href; return; }
    var rows = now.querySelector("tbody, ul"), more = next.querySelector("tbody, ul");
    var have = rows.children.length, added = Array.prototype.slice.call(more.children, have);
    added.forEach(function (r) { rows.appendChild(document.importNode(r, true)); });
    var bar = now.querySelector(".more"), nextBar = next.querySelector(".more");
    if (nextBar) bar.replaceWith(document.importNode(nextBar, true)); else bar.remove();
    history.replaceState(null, "", a.href);
  }).catch(function () { location.href = a.href; });
});
(function () {      // autocomplete boxes: options come from the server as one types; arrow keys and Enter, or a click, pick one
  function setup(box) {
    var input = box.querySelector("[role=combobox]"), hidden = box.querySelector("input[type=hidden]");
    var list = box.querySelector("[role=listbox]"), cid = input.dataset.controlId, active = -1, timer = null, asked = 0;
    function options() { return list.querySelectorAll("[role=option]"); }
    function close() { list.hidden = true; list.innerHTML = ""; input.setAttribute("aria-expanded", "false"); input.removeAttribute("aria-activedescendant"); active = -1; }
    function pick(li) { hidden.value = li.dataset.value; input.value = li.textContent; close(); }
    function mark(k) {
      var opts = options();
      if (!opts.length) return;
      active = (k + opts.length) % opts.length;
      opts.forEach(function (o, j) { o.setAttribute("aria-selected", j === active ? "true" : "false"); });
      input.setAttribute("aria-activedescendant", opts[active].id);
    }
    function ask() {
      var q = input.value.trim(), n = ++asked;
      if (!q) { close(); return; }
      fetch(box.dataset.suggest + "?q=" + encodeURIComponent(q), {credentials: "same-origin"})
        .then(function (r) { return r.json(); }).then(function (hits) {
          if (n !== asked) return;                       // a later keystroke asked again
          list.innerHTML = "";
          hits.forEach(function (h) {
            var li = document.createElement("li");
            li.setAttribute("role", "option"); li.setAttribute("aria-selected", "false"); li.id = input.id + "-option-" + h.value;
            li.tabIndex = -1; li.dataset.controlId = cid; li.dataset.part = "option"; li.dataset.value = h.value; li.textContent = h.text;
            list.appendChild(li);
          });
          if (!hits.length) { var none = document.createElement("li"); none.className = "none"; none.textContent = "No matches"; list.appendChild(none); }
          list.hidden = false; input.setAttribute("aria-expanded", "true"); active = -1;
        });
    }
    input.addEventListener("input", function () { hidden.value = ""; clearTimeout(timer); timer = setTimeout(ask, 150); });
    input.addEventListener("keydown", function (e) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") { e.preventDefault(); mark(active + (e.key === "ArrowDown" ? 1 : -1)); }
      else if (e.key === "Enter" && !list.hidden) { e.preventDefault(); var o = options()[active]; if (o) pick(o); }
      else if (e.key === "Escape") close();
    });
    list.addEventListener("mousedown", function (e) { e.preventDefault(); });     // the box keeps focus until the click picks
    list.addEventListener("click", function (e) { var li = e.target.closest("[role=option]"); if (li) pick(li); });
    document.addEventListener("click", function (e) { if (!box.contains(e.target)) close(); });
  }
  document.querySelectorAll(".combo").forEach(setup);
})();
document.addEventListener("click", function (e) {      // a busy button: disabled while its slow request runs
  var b = e.target.closest && e.target.closest("button[data-live]");
  if (!b || b.disabled) return;
  var out = b.parentElement.querySelector("output"), label = b.textContent;
  b.disabled = true; b.setAttribute("aria-busy", "true"); b.textContent = "Checking…"; out.textContent = "…";
  fetch(b.dataset.live, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (d) { out.textContent = d.text; })
    .catch(function () { out.textContent = "Could not check; try again."; })
    .then(function () { b.disabled = false; b.removeAttribute("aria-busy"); b.textContent = label; });
});
document.addEventListener("click", function (e) {      // a menu bar: a section's button opens its submenu (hover shows it too)
  var s = e.target.closest && e.target.closest(".menubar [data-part=section]");
  document.querySelectorAll(".menubar [data-part=section]").forEach(function (o) {
    var open = o === s && o.getAttribute("aria-expanded") !== "true";
    o.setAttribute("aria-expanded", open ? "true" : "false");
    o.nextElementSibling.hidden = !open;
  });
});
document.querySelectorAll(".toast").forEach(function (t) {      // a toast fades after five seconds, then is gone
  setTimeout(function () { t.classList.add("fading"); }, 5000);
  setTimeout(function () { t.remove(); }, 6000);
});
(function () {      // calendar widgets: a month grid with previous/next month buttons; a day's button sets the date
  var MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function setup(box) {
    var shown = box.querySelector("[data-part=shown]"), hidden = box.querySelector("input[type=hidden]");
    var cal = box.querySelector(".calendar"), cid = shown.dataset.controlId, month = box.dataset.month;
    function button(part, text, value) {
      var b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.dataset.controlId = cid; b.dataset.part = part;
      if (value) b.dataset.value = value;
      return b;
    }
    function draw() {
      var y = +month.slice(0, 4), m = +month.slice(5, 7), first = new Date(Date.UTC(y, m - 1, 1)).getUTCDay();
      var days = new Date(Date.UTC(y, m, 0)).getUTCDate();
      cal.innerHTML = "";
      var head = document.createElement("div"); head.className = "cal-head";
      var label = document.createElement("span"); label.className = "month"; label.dataset.controlId = cid; label.dataset.part = "month";
      label.dataset.value = month; label.textContent = MONTHS[m - 1] + " " + y;
      head.append(button("prev_year", "« Year"), button("prev", "‹ Prev"), label, button("next", "Next ›"), button("next_year", "Year »"));
      var grid = document.createElement("div"); grid.className = "cal-grid";
      ["Su", "Mo", "Tu", "We", "Th", "Fr", "Sa"].forEach(function (d) { var s = document.createElement("span"); s.textContent = d; grid.append(s); });
      for (var k = 0; k < first; k++) grid.append(document.createElement("span"));
      for (var d = 1; d <= days; d++) {
        var v = month + "-" + pad(d), b = button("day", String(d), v);
        if (v === hidden.value) b.setAttribute("aria-pressed", "true");
        grid.append(b);
      }
      cal.append(head, grid);
    }
    function step(k) { var y = +month.slice(0, 4), m = +month.slice(5, 7) - 1 + k; y += Math.floor(m / 12); m = ((m % 12) + 12) % 12; month = y + "-" + pad(m + 1); draw(); }
    box.addEventListener("click", function (e) {
      var b = e.target.closest("button, [data-part=shown]");
      if (!b) return;
      var part = b.dataset.part;
      if (part === "open" || part === "shown") { cal.hidden = !cal.hidden; if (!cal.hidden) draw(); }
      else if (part === "prev") step(-1);
      else if (part === "next") step(1);
      else if (part === "prev_year") step(-12);
      else if (part === "next_year") step(12);
      else if (part === "day") { hidden.value = shown.value = b.dataset.value; cal.hidden = true; }
    });
  }
  document.querySelectorAll(".calpick").forEach(setup);
})();
document.querySelectorAll("form[data-wizard]").forEach(function (form) {      // a wizard: the form's fields in steps, then a review
  var per = +form.dataset.wizard, submit = form.querySelector(":scope > button[type=submit]"), cid = submit.dataset.controlId;
  var fields = Array.prototype.slice.call(form.querySelectorAll(":scope > .field")), steps = [], n = Math.ceil(fields.length / per);
  function button(part, text) {
    var b = document.createElement("button"); b.type = "button"; b.textContent = text; b.dataset.controlId = cid; b.dataset.part = part;
    if (part === "back") b.className = "ghost";
    return b;
  }
  function label(f) { var l = f.querySelector("label"); return l ? l.textContent.replace(/\s*\*$/, "") : ""; }
  function value(f) {
    var el = f.querySelector("select, textarea, input:not([type=hidden]), input[type=hidden]"), h = f.querySelector("input[type=hidden]");
    if (!el) return "";
    if (el.tagName === "SELECT") return el.value ? el.options[el.selectedIndex].text : "";
    if (el.type === "checkbox") return el.checked ? "yes" : "no";
    return el.value || (h ? h.value : "");
  }
  for (var i = 0; i < n; i++) {
    var fs = document.createElement("fieldset"), lg = document.createElement("legend"), nav = document.createElement("div");
    fs.className = "step"; fs.dataset.step = String(i + 1); lg.textContent = "Step " + (i + 1) + " of " + (n + 1); fs.append(lg);
    fields.slice(i * per, (i + 1) * per).forEach(function (f) { fs.append(f); });
    nav.className = "actions"; if (i > 0) nav.append(button("back", "Back")); nav.append(button("next", "Next")); fs.append(nav);
    form.insertBefore(fs, submit); steps.push(fs);
  }
  var review = document.createElement("fieldset"), rl = document.createElement("legend"), dl = document.createElement("dl"), rnav = document.createElement("div");
  review.className = "step"; review.dataset.step = "review"; rl.textContent = "Step " + (n + 1) + " of " + (n + 1) + ": review"; dl.className = "facts";
  rnav.className = "actions"; rnav.append(button("back", "Back"), submit); review.append(rl, dl, rnav); form.append(review); steps.push(review);
  var at = 0;
  function show(k) {
    at = k; steps.forEach(function (s, j) { s.hidden = j !== k; });
    if (k === n) { dl.innerHTML = ""; fields.forEach(function (f) { var dt = document.createElement("dt"), dd = document.createElement("dd"); dt.textContent = label(f); dd.textContent = value(f); dl.append(dt, dd); }); }
  }
  function missing(step) {                                   // the step's required fields left empty: an error under each
    var bad = 0;
    step.querySelectorAll(".field").forEach(function (f) {
      var old = f.querySelector(".wizard-error"); if (old) old.remove();
      var l = f.querySelector("label"); if (!l || !/\*\s*$/.test(l.textContent) || value(f) !== "") return;
      var p = document.createElement("p"); p.className = "error field-error wizard-error"; p.textContent = label(f) + " is required."; f.append(p); bad++;
    });
    return bad;
  }
  form.addEventListener("click", function (e) {
    var b = e.target.closest("button[data-part]"); if (!b || b.dataset.controlId !== cid) return;
    if (b.dataset.part === "next" && !missing(steps[at])) show(at + 1);
    if (b.dataset.part === "back") show(at - 1);
  });
  var firstBad = steps.findIndex(function (s) { return s.querySelector(".field.invalid"); });   // the server refused: show that step
  show(firstBad >= 0 ? firstBad : 0);
});
if (window.customElements && !customElements.get("wm-rating")) {      // a rating widget: its stars live in its shadow root
  customElements.define("wm-rating", class extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return;
      var root = this.attachShadow({mode: "open"}), cid = this.dataset.controlId, post = this.dataset.post;
      var csrf = document.body.dataset.csrf || "";
      root.innerHTML = '<style>:host{display:block;margin:.8rem 0}button{font:inherit;margin-right:.3rem;padding:.3rem .6rem;cursor:pointer}' +
        'output{display:block;margin-top:.4rem}</style><span part="label"></span> ';
      root.querySelector("span").textContent = this.dataset.label + ": ";
      for (var k = 1; k <= 5; k++) {
        var b = document.createElement("button"); b.type = "button"; b.textContent = k + "★";
        b.dataset.controlId = cid; b.dataset.part = "star"; b.dataset.value = String(k); b.setAttribute("aria-label", k + " of 5 stars");
        root.append(b);
      }
      var out = document.createElement("output"); out.dataset.controlId = cid; out.dataset.part = "thanks"; root.append(out);
      root.addEventListener("click", function (e) {
        var b = e.target.closest("button"); if (!b) return;
        fetch(post, {method: "POST", credentials: "same-origin", body: new URLSearchParams({stars: b.dataset.value, csrf_token: csrf})})
          .then(function (r) { return r.json(); }).then(function (d) { out.textContent = d.text; });
      });
    }
  });
}
