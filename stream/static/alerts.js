// The live alerts page: polls /api/alerts and redraws the list, keeping the chosen filters.
// Alert text comes from chatbots, so everything is inserted as text nodes, never as HTML.
"use strict";
(function () {
  const POLL_MS = 1000;
  const list = document.getElementById("alerts");
  const empty = document.getElementById("empty");
  const status = document.getElementById("status");
  const botSelect = document.getElementById("bot");
  const severitySelect = document.getElementById("severity");
  const params = new URLSearchParams(window.location.search);
  // A bot from the address may not have raised anything yet: offer it anyway so the filter holds.
  if (params.get("bot")) botSelect.appendChild(new Option(params.get("bot"), params.get("bot")));
  botSelect.value = params.get("bot") || "";
  severitySelect.value = params.get("severity") || "";
  let shown = new Set();
  let firstDraw = true;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function safeUrl(url) {
    try {
      const parsed = new URL(url);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (e) {
      return null;
    }
  }

  function sourceItem(source) {
    const li = el("li", "source");
    const href = safeUrl(source.url);
    const title = source.title || source.url || source.passage_id;
    if (href) {
      const a = el("a", null, title);
      a.href = href;
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      li.appendChild(a);
    } else {
      li.appendChild(el("span", null, title));
    }
    li.appendChild(el("span", "date", " · " + (source.published_at ? "published " + source.published_at : "undated")));
    return li;
  }

  function render(alert) {
    const li = el("li", "alert " + alert.severity);
    li.dataset.alertId = alert.alert_id;
    li.dataset.bot = alert.bot;
    li.dataset.severity = alert.severity;
    const meta = el("div", "meta");
    meta.appendChild(el("span", "badge", alert.severity));
    meta.appendChild(el("span", "bot", alert.bot || "(no bot)"));
    meta.appendChild(el("span", "where", "conversation " + alert.conversation_id + " · turn " + alert.turn_id));
    meta.appendChild(el("span", "raised", new Date(alert.raised_at * 1000).toLocaleString()));
    meta.appendChild(el("span", "latency", "latency " + alert.latency_seconds.toFixed(1) + " s"));
    li.appendChild(meta);
    li.appendChild(el("h3", null, "False claims"));
    for (const claim of alert.false_claims) {
      const p = el("p", "claim");
      p.appendChild(el("span", "said", claim.claim_text));
      p.appendChild(el("br"));
      p.appendChild(el("span", "fix", claim.correction || "(no correction the evidence supports)"));
      li.appendChild(p);
    }
    if (alert.corrected_text) {
      li.appendChild(el("h3", null, "Correction"));
      li.appendChild(el("p", "corrected", alert.corrected_text));
    }
    if (alert.sources.length) {
      li.appendChild(el("h3", null, "Sources"));
      const ul = el("ul", "sources");
      for (const source of alert.sources) ul.appendChild(sourceItem(source));
      li.appendChild(ul);
    }
    return li;
  }

  function updateBots(bots) {
    const chosen = botSelect.value;
    const wanted = new Set(bots);
    if (chosen) wanted.add(chosen);
    const present = new Set(Array.from(botSelect.options).map((o) => o.value).filter((v) => v));
    for (const bot of Array.from(wanted).sort()) {
      if (!present.has(bot)) botSelect.appendChild(new Option(bot, bot));
    }
  }

  let drawnKey = null;

  function draw(data) {
    updateBots(data.bots);
    // Redraw only when the list changed, so reading or selecting text is not disturbed every second.
    const key = data.alerts.map((a) => a.alert_id).join(",");
    if (key === drawnKey) return;
    drawnKey = key;
    const ids = new Set(data.alerts.map((a) => a.alert_id));
    const fragment = document.createDocumentFragment();
    for (const alert of data.alerts) {
      const node = render(alert);
      if (!firstDraw && !shown.has(alert.alert_id)) node.classList.add("fresh");
      fragment.appendChild(node);
    }
    list.replaceChildren(fragment);
    empty.hidden = data.alerts.length > 0;
    shown = ids;
    firstDraw = false;
  }

  let timer = null;
  let generation = 0; // a reply to a request made before the filters changed is dropped

  async function poll() {
    clearTimeout(timer);
    const mine = ++generation;
    const query = new URLSearchParams();
    if (botSelect.value) query.set("bot", botSelect.value);
    if (severitySelect.value) query.set("severity", severitySelect.value);
    try {
      const response = await fetch("/api/alerts?" + query.toString(), { cache: "no-store" });
      if (!response.ok) throw new Error(await response.text());
      const data = await response.json();
      if (mine !== generation) return;
      draw(data);
      status.textContent = "live · updated " + new Date().toLocaleTimeString();
      status.classList.remove("down");
    } catch (e) {
      if (mine !== generation) return;
      status.textContent = "cannot reach the worker (" + e.message + "), retrying";
      status.classList.add("down");
    }
    timer = setTimeout(poll, POLL_MS);
  }

  function onFilter() {
    const query = new URLSearchParams();
    if (botSelect.value) query.set("bot", botSelect.value);
    if (severitySelect.value) query.set("severity", severitySelect.value);
    const qs = query.toString();
    // Keep the filters in the address so a bookmarked page opens filtered; no reload.
    window.history.replaceState(null, "", qs ? "?" + qs : window.location.pathname);
    firstDraw = true;
    drawnKey = null;
    poll();
  }

  botSelect.addEventListener("change", onFilter);
  severitySelect.addEventListener("change", onFilter);
  poll();
})();
