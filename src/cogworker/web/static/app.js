// cogworker dashboard: local times, Live refresh, charts, theme and width toggles.
// Everything works without this file; it only makes the pages livelier. No eval, no inline
// handlers: the Content-Security-Policy allows scripts from this site only.
(function () {
  "use strict";

  var root = document.documentElement;
  root.classList.add("js");

  function meta(name, fallback) {
    var el = document.querySelector('meta[name="' + name + '"]');
    return el ? el.getAttribute("content") : fallback;
  }

  function stored(key, fallback) {
    try { return localStorage.getItem(key) || fallback; } catch (e) { return fallback; }
  }

  function store(key, value) {
    try { localStorage.setItem(key, value); } catch (e) { /* private mode: not kept */ }
  }

  // ---- local time ---------------------------------------------------------------------
  var FORMAT = meta("cogworker-time-format", "%Y-%m-%d %H:%M:%S");
  window.COGWORKER_TIME_FORMAT = FORMAT;
  var MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December"];
  var DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function strftime(date, format) {
    return format.replace(/%([YmdHMSBbAap%])/g, function (_, token) {
      switch (token) {
        case "Y": return String(date.getFullYear());
        case "m": return pad(date.getMonth() + 1);
        case "d": return pad(date.getDate());
        case "H": return pad(date.getHours());
        case "M": return pad(date.getMinutes());
        case "S": return pad(date.getSeconds());
        case "B": return MONTHS[date.getMonth()];
        case "b": return MONTHS[date.getMonth()].slice(0, 3);
        case "A": return DAYS[date.getDay()];
        case "a": return DAYS[date.getDay()].slice(0, 3);
        case "p": return date.getHours() < 12 ? "AM" : "PM";
        default: return "%";
      }
    });
  }
  window.cogworkerStrftime = strftime;

  function localTimes(scope) {
    var nodes = (scope || document).querySelectorAll("time[data-cw-time]");
    for (var i = 0; i < nodes.length; i++) {
      var when = new Date(nodes[i].getAttribute("datetime"));
      if (!isNaN(when.getTime())) { nodes[i].textContent = strftime(when, FORMAT); }
    }
  }

  // ---- toggles ------------------------------------------------------------------------
  var THEMES = ["system", "light", "dark"];

  function applyTheme(theme) {
    if (theme === "system") { root.removeAttribute("data-theme"); }
    else { root.setAttribute("data-theme", theme); }
    var button = document.querySelector("[data-cw-theme]");
    if (button) { button.setAttribute("title", "Theme: " + theme + " (click to change)"); }
  }

  function applyWidth(width) { root.setAttribute("data-width", width); }

  function live() { return stored("cw-live", "on") === "on"; }

  function applyLive() {
    var button = document.querySelector("[data-cw-live]");
    if (button) { button.setAttribute("aria-pressed", live() ? "true" : "false"); }
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target : null;
    if (!target) { return; }
    if (target.closest("[data-cw-live]")) {
      store("cw-live", live() ? "off" : "on");
      applyLive();
      if (live()) { tick(); }
    } else if (target.closest("[data-cw-width]")) {
      var width = stored("cw-width", "fixed") === "fixed" ? "full" : "fixed";
      store("cw-width", width);
      applyWidth(width);
      resizeCharts();
    } else if (target.closest("[data-cw-theme]")) {
      var next = THEMES[(THEMES.indexOf(stored("cw-theme", "system")) + 1) % THEMES.length];
      store("cw-theme", next);
      applyTheme(next);
      redrawCharts();
    }
  });

  applyTheme(stored("cw-theme", "system"));
  applyWidth(stored("cw-width", "fixed"));

  // ---- charts -------------------------------------------------------------------------
  var charts = [];

  function cssVar(name) { return getComputedStyle(root).getPropertyValue(name).trim(); }

  function fmt(n) { return Number(n).toLocaleString(); }

  function chartOptions(el, labels) {
    var grid = { stroke: cssVar("--border"), width: 1 };
    var axis = { stroke: cssVar("--muted"), grid: grid, ticks: { show: false },
      font: "11px Inter, system-ui, sans-serif" };
    var lines = el.getAttribute("data-cw-kind") === "lines";
    var unit = el.getAttribute("data-cw-unit") || "";
    var colors = lines ? [cssVar("--ok"), cssVar("--warn"), cssVar("--bad")]
      : [cssVar("--accent"), cssVar("--bad")];
    var series = [{}];
    labels.forEach(function (label, index) {
      var color = colors[index % colors.length];
      series.push(index === 0 && !lines
        ? { label: label, stroke: color, fill: color + "55", width: 0,
            paths: window.uPlot.paths.bars({ size: [0.7, 40] }), points: { show: false } }
        : { label: label, stroke: color, width: 2, points: { show: false }, spanGaps: lines });
    });
    return {
      width: Math.max(el.clientWidth, 200), height: el.clientHeight || 220,
      legend: { show: false }, cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, Math.max(4, max * 1.1)]; } } },
      axes: [axis, Object.assign({}, axis, { size: 56, values: function (u, v) { return v.map(function (n) { return fmt(n) + unit; }); } })],
      series: series,
      hooks: { setCursor: [function (u) { showTip(el, u, labels, unit); }] },
    };
  }

  function showTip(el, u, labels, unit) {
    var tip = el.querySelector(".chart-tip");
    var i = u.cursor.idx;
    if (!tip) { return; }
    if (i === null || i === undefined) { tip.textContent = ""; return; }
    var parts = [strftime(new Date(u.data[0][i] * 1000), el.getAttribute("data-cw-tip") || "%H:00")];
    labels.forEach(function (label, index) {
      var value = u.data[index + 1][i];
      parts.push(value === null || value === undefined ? label + " n/a"
        : unit ? label + " " + fmt(Math.round(value * 10) / 10) + unit
          : fmt(value) + " " + label.toLowerCase());
    });
    tip.textContent = parts.join(" · ");
  }

  function chartData(json, keys) {
    var xs = json.labels.map(function (iso) { return Date.parse(iso) / 1000; });
    return [xs].concat(keys.map(function (key) { return json[key] || []; }));
  }

  function loadChart(entry) {
    return fetch(entry.url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (json) {
        if (!json || !window.uPlot) { return; }
        var data = chartData(json, entry.keys);
        if (entry.plot) { entry.plot.setData(data); }
        else { entry.plot = new window.uPlot(chartOptions(entry.el, entry.labels), data, entry.el); }
      })
      .catch(function () { /* the next tick tries again */ });
  }

  function setUpCharts(scope) {
    var nodes = (scope || document).querySelectorAll("[data-cw-chart]");
    for (var i = 0; i < nodes.length; i++) {
      if (nodes[i].dataset.cwReady) { continue; }
      nodes[i].dataset.cwReady = "1";
      var entry = { el: nodes[i], url: nodes[i].getAttribute("data-cw-chart"),
        keys: nodes[i].getAttribute("data-cw-series").split(","),
        labels: nodes[i].getAttribute("data-cw-labels").split(","), plot: null };
      charts.push(entry);
      loadChart(entry);
    }
    charts = charts.filter(function (entry) { return document.body.contains(entry.el); });
  }

  function resizeCharts() {
    charts.forEach(function (entry) {
      if (entry.plot) { entry.plot.setSize({ width: Math.max(entry.el.clientWidth, 200), height: entry.el.clientHeight || 220 }); }
    });
  }

  function redrawCharts() {
    charts.forEach(function (entry) {
      if (entry.plot) { entry.plot.destroy(); entry.plot = null; }
      loadChart(entry);
    });
  }

  window.addEventListener("resize", resizeCharts);
  if (window.matchMedia) {
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redrawCharts);
  }

  // ---- Live refresh: one request at a time, paused while the tab is hidden --------------
  var INTERVAL = parseInt(meta("cogworker-live-interval", "3000"), 10) || 3000;
  var busy = false;

  function skip(el) {
    var active = document.activeElement;
    return (active && active !== document.body && el.contains(active)) ||
      el.querySelector("details[open]") !== null;
  }

  function refresh(el) {
    var url = el.getAttribute("data-poll");
    if (!url || !window.htmx || skip(el) || !document.body.contains(el)) { return Promise.resolve(); }
    return window.htmx.ajax("GET", url, { target: el, swap: "outerHTML" }).catch(function () {});
  }

  function tick() {
    if (busy || !live() || document.hidden) { return; }
    busy = true;
    var regions = Array.prototype.slice.call(document.querySelectorAll("[data-poll]"));
    var chain = regions.reduce(function (done, el) {
      return done.then(function () { return refresh(el); });
    }, Promise.resolve());
    charts.forEach(function (entry) { chain = chain.then(function () { return loadChart(entry); }); });
    chain.then(function () { busy = false; }, function () { busy = false; });
  }

  setInterval(tick, INTERVAL);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { tick(); } });

  function ready(scope) {
    localTimes(scope);
    setUpCharts(scope);
  }

  document.addEventListener("htmx:load", function (event) { applyLive(); ready(event.target); });
  document.addEventListener("DOMContentLoaded", function () { applyLive(); applyTheme(stored("cw-theme", "system")); ready(document); });
  if (document.readyState !== "loading") { applyLive(); ready(document); }
})();
