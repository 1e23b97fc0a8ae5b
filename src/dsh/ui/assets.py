"""The viewer's static files: one stylesheet and one small script (no build step, no CDN)."""

from __future__ import annotations

from typing import Final

CSS: Final = """
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f8f9fb; --accent:#3b5bdb;
  --fork:#c2410c; --spawn:#0f766e; --err:#b42318; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg);
  background:var(--bg); }
header.top { background:#111827; color:#fff; padding:10px 20px; display:flex; gap:16px; align-items:center; }
header.top a { color:#fff; text-decoration:none; font-weight:600; }
header.top .store { color:#9ca3af; font-family:ui-monospace, monospace; font-size:12px; }
main { padding:16px 20px; max-width:1200px; margin:0 auto; }
a { color:var(--accent); }
code, pre, .mono { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:12.5px; }
pre { white-space:pre-wrap; word-break:break-word; background:#fff; border:1px solid var(--line);
  padding:8px 10px; border-radius:6px; margin:4px 0; max-height:420px; overflow:auto; }
table.list { width:100%; border-collapse:collapse; background:#fff; border:1px solid var(--line); }
table.list th, table.list td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line);
  vertical-align:top; }
table.list th a { color:inherit; text-decoration:none; }
table.list td.num, table.list th.num { text-align:right; }
.prompt-cell { color:var(--muted); max-width:340px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.badge { display:inline-block; padding:0 7px; border-radius:10px; font-size:12px; background:#eef2ff; }
.status-running { background:#dbeafe; } .status-completed { background:#dcfce7; }
.status-interrupted { background:#fef3c7; } .status-error { background:#fee2e2; color:var(--err); }
.kind-fork { background:#ffedd5; color:var(--fork); } .kind-spawn { background:#ccfbf1; color:var(--spawn); }
form.search { display:flex; gap:8px; margin-bottom:12px; }
form.search input[type=search] { flex:1; padding:6px 8px; border:1px solid var(--line); border-radius:6px; }
.pager { margin:10px 0; display:flex; gap:12px; color:var(--muted); }
.grid { display:grid; grid-template-columns:max-content 1fr; gap:2px 16px; background:#fff;
  border:1px solid var(--line); padding:10px 12px; border-radius:6px; }
.grid dt { font-weight:600; } .grid dd { margin:0; }
.cols { display:grid; grid-template-columns: 320px 1fr; gap:16px; align-items:start; }
section.card { background:#fff; border:1px solid var(--line); border-radius:6px; padding:10px 12px; margin-bottom:14px; }
section.card h2 { font-size:15px; margin:0 0 8px; }
ul.tree, ul.tree ul { list-style:none; margin:0; padding-left:16px; }
ul.tree { padding-left:0; }
ul.tree li { position:relative; padding:2px 0 2px 12px; border-left:1px solid var(--line); }
ul.tree li::before { content:""; position:absolute; left:0; top:12px; width:10px; border-top:1px solid var(--line); }
ul.tree li.current > .node { font-weight:700; background:#eef2ff; border-radius:4px; }
.node { padding:1px 4px; display:inline-block; }
.node .meta { color:var(--muted); font-size:12px; }
.timeline { position:relative; display:flex; height:26px; margin:18px 0 26px; border-radius:4px; overflow:visible; }
.timeline .tick { flex:1; border-right:1px solid #fff; background:#c7d2fe; min-width:2px; }
.timeline .tick.t-user { background:#93c5fd; } .timeline .tick.t-assistant { background:#a5b4fc; }
.timeline .tick.t-tool { background:#fcd34d; } .timeline .tick.t-turn { background:#e5e7eb; }
.timeline .tick.inherited { opacity:.45; }
.legend { font-size:12px; color:var(--muted); margin:6px 0 0; }
.legend .key { display:inline-block; width:10px; height:10px; margin:0 4px 0 10px; vertical-align:middle; background:#c7d2fe; }
.legend .key.t-user { background:#93c5fd; } .legend .key.t-assistant { background:#a5b4fc; }
.legend .key.t-tool { background:#fcd34d; } .legend .key.t-turn { background:#e5e7eb; }
.legend .key.inherited { opacity:.45; }
pre.problem { white-space:pre-wrap; }
.nest { color:var(--muted); }
.timeline .cutmark { position:absolute; top:-8px; bottom:-8px; width:0; border-left:3px solid var(--fork); }
.timeline .cutmark span { position:absolute; top:32px; left:-4px; white-space:nowrap; font-size:11.5px;
  color:var(--fork); font-weight:600; }
.timeline .cutmark.own { border-left-style:dashed; }
.item { padding:6px 0; border-top:1px solid var(--line); }
.item.inherited { opacity:.6; }
.item .who { font-size:12px; color:var(--muted); font-weight:600; text-transform:uppercase; letter-spacing:.03em; }
.item.prompt .body { background:#eff6ff; padding:6px 10px; border-radius:6px; white-space:pre-wrap; }
.item.answer .body { padding:0 4px; }
.item.attempt { color:var(--err); }
.reuse-table { border-collapse:collapse; font-size:12px; } .reuse-table td, .reuse-table th { padding:2px 6px; text-align:left; }
.reuse.flagged td { color:var(--err); }
.item.turn-start { color:var(--muted); font-size:12px; border-top:2px solid #cbd5e1; margin-top:8px; }
.item.turn-end, .item.usage, .item.request { color:var(--muted); font-size:12px; }
.item.cut { color:var(--fork); font-weight:600; border-top:3px solid var(--fork); }
.item.compaction { border-top:3px double #94a3b8; }
.item.compaction .summary { background:#f8fafc; padding:6px 10px; border-radius:6px; }
.item.compaction.error { color:var(--err); }
.item.compaction .original { margin:6px 0 6px 12px; }
.item.tool-result.error pre { border-color:var(--err); }
details summary { cursor:pointer; color:var(--muted); }
table.events td.data pre { max-height:160px; margin:0; }
tr.cutrow td { color:var(--fork); font-weight:600; border-top:3px solid var(--fork); }
tr.inherited td { color:var(--muted); }
.live { font-size:12px; color:var(--muted); } .live.on::before { content:"● "; color:#16a34a; }
.streaming { color:var(--muted); border-style:dashed; }
.side { display:grid; grid-template-columns:1fr 1fr; gap:12px; }
.diverged { background:#fee2e2; }
.first-divergence-line { background:#fecaca; font-weight:700; outline:1px solid var(--err); }
"""  # noqa: E501

JS: Final = """
// dsh ui: live updates. The server sends escaped HTML fragments it rendered itself.
(function () {
  var root = document.querySelector("[data-live-url]");
  if (!root || !window.EventSource) return;
  var badge = document.getElementById("live");
  var transcript = document.getElementById("transcript");
  var events = document.getElementById("events-body");
  var count = document.getElementById("event-count");
  var status = document.getElementById("status");
  var next = parseInt(root.getAttribute("data-next-seq"), 10);
  var current = root.getAttribute("data-status");
  // The green dot means "running and connected": a finished session is never shown live.
  function mark(text) {
    if (text === "live") root.setAttribute("data-connected", "1"); else root.removeAttribute("data-connected");
    if (!badge) return;
    var on = text === "live" && current === "running";
    badge.classList.toggle("on", on);
    badge.textContent = on ? "live" : (current === "running" ? text : "");
  }
  function open() {
    var source = new EventSource(root.getAttribute("data-live-url") + "?from=" + next);
    source.onopen = function () { mark("live"); };
    source.addEventListener("append", function (msg) {
      var data = JSON.parse(msg.data);
      if (data.seq < next) return;
      var streaming = document.getElementById("streaming");
      if (streaming && data.type === "assistant/message") streaming.remove();
      next = data.seq + 1;
      if (transcript && data.items) transcript.insertAdjacentHTML("beforeend", data.items);
      if (events && data.row) events.insertAdjacentHTML("beforeend", data.row);
      if (count) count.textContent = String(next);
      if (data.status) current = data.status;
      if (status && data.status) { status.textContent = data.status; status.className = "badge status-" + data.status; }
      mark("live");
    });
    source.addEventListener("delta", function (msg) {
      var data = JSON.parse(msg.data);
      var box = document.getElementById("streaming");
      if (!box && transcript) {
        box = document.createElement("pre");
        box.id = "streaming";
        box.className = "streaming";
        transcript.appendChild(box);
      }
      if (box) box.textContent += data.text;
    });
    source.addEventListener("idle", function () { mark(""); source.close(); setTimeout(open, 300); });
    source.onerror = function () {
      mark("reconnecting");
      source.close(); setTimeout(open, 1000);
    };
  }
  open();
})();
"""  # noqa: E501
