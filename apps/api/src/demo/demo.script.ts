/**
 * The /demo page's browser script, as text (the apps compile without DOM types). Plain ES2020, no
 * template literals, so it embeds in the page as is. State is on `window.demo` for the e2e test.
 */
export const DEMO_SCRIPT = String.raw`
(function () {
  'use strict';
  var WINDOW_MS = 60000, PING_MS = 200, LOOP_MS = 1000, FLOOR_MS = 0.1, CEIL_MS = 10000, MAX_ACTIVE = 4, POLL_MS = 250;
  var params = new URLSearchParams(location.search);
  var baseline = (params.get('baseline') || '').replace(/\/+$/, '');
  var demo = (window.demo = { targets: {} });

  function target(id, url, enabled) {
    var el = document.getElementById(id);
    var t = {
      id: id, url: url, enabled: enabled, el: el,
      canvas: el.querySelector('canvas'), statsEl: el.querySelector('[data-stats]'), jobsEl: el.querySelector('[data-jobs]'),
      pings: [], loops: [], pingSent: 0, pingStarted: 0, pingBusy: false, loopBusy: false, lastLoopAt: 0,
      sent: 0, done: 0, failed: 0, active: 0, waiting: [], draws: 0, error: ''
    };
    el.querySelector('[data-fire]').addEventListener('click', function () { fire(t); });
    if (!enabled) el.querySelector('[data-fire]').disabled = true;
    demo.targets[id] = t;
    return t;
  }

  var targets = [target('template', '', true), target('baseline', baseline, !!baseline)];
  if (baseline) targets[1].el.querySelector('[data-where]').textContent += ' at ' + baseline;
  else targets[1].statsEl.innerHTML = '<span class="note">No baseline: open this page with ?baseline=http://host:port ' +
    '(npm run demo starts one and prints the link).</span>';

  function prune(list, now) {
    while (list.length && list[0].t < now - WINDOW_MS) list.shift();
  }

  function ping(t) {
    if (t.pingBusy) return;
    t.pingBusy = true;
    var started = performance.now();
    t.pingStarted = started;
    t.pingSent++;
    fetch(t.url + '/demo/ping', { cache: 'no-store' })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
      .then(function () { t.pings.push({ t: started, ms: performance.now() - started }); t.error = ''; })
      .catch(function (e) { t.error = 'ping failed: ' + e.message; })
      .then(function () { t.pingBusy = false; });
  }

  function readLoop(t) {
    var now = performance.now();
    if (t.loopBusy || now - t.lastLoopAt < LOOP_MS) return;
    t.loopBusy = true;
    t.lastLoopAt = now;
    fetch(t.url + '/demo/loop', { cache: 'no-store' })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
      .then(function (d) { t.loops.push({ t: performance.now(), p99: d.p99Ms, max: d.maxMs, p50: d.p50Ms }); })
      .catch(function (e) { t.error = 'loop read failed: ' + e.message; })
      .then(function () { t.loopBusy = false; });
  }

  // The work on offer: every job type this API serves (GET /v1/job-types); the baseline runs the same
  // declarations. A job's input is the type's first example with Size in its first integer field
  // and a fresh value in each free-text string field, so no two jobs share a cache entry.
  var work = document.getElementById('work'), sizeEl = document.getElementById('size');
  demo.types = {};
  function sizeField(t) {
    var props = t.inputSchema.properties || {};
    return Object.keys(props).filter(function (k) { return props[k].type === 'integer'; })[0];
  }
  function freshFields(t) {
    var props = t.inputSchema.properties || {};
    return Object.keys(props).filter(function (k) { return props[k].type === 'string' && !props[k].enum && !props[k].pattern && !props[k].format; });
  }
  function chosen() {
    var t = demo.types[work.value], field = t && sizeField(t);
    sizeEl.value = field && t.examples[0][field] !== undefined ? t.examples[0][field] : 1;
    sizeEl.disabled = !field;
    sizeEl.title = field ? field + ' in the input (at most ' + t.inputSchema.properties[field].maximum + ')' : 'this type has no integer field';
  }
  fetch('/v1/job-types', { cache: 'no-store' })
    .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
    .then(function (list) {
      work.innerHTML = '';
      list.filter(function (t) { return t.examples.length; }).forEach(function (t) {
        demo.types[t.type] = t;
        work.add(new Option(t.type + (freshFields(t).length ? '' : ' (the template caches each input after one run)'), t.type));
      });
      // why: a type with a string to make fresh runs every job it is sent; one without is cached after one run.
      var fresh = Object.keys(demo.types).filter(function (type) { return freshFields(demo.types[type]).length; })[0];
      if (fresh) work.value = fresh;
      work.addEventListener('change', chosen);
      chosen();
    })
    .catch(function (e) { work.innerHTML = ''; work.add(new Option('job types not loaded: ' + e.message, '')); });

  function jobInput() {
    var t = demo.types[work.value], field = sizeField(t);
    var input = JSON.parse(JSON.stringify(t.examples[0]));
    if (field) input[field] = Math.max(1, Math.min(Number(sizeEl.value) || 1, t.inputSchema.properties[field].maximum || Infinity));
    freshFields(t).forEach(function (k) { input[k] = Math.random().toString(36).slice(2) + Date.now().toString(36); });
    return { type: t.type, input: input };
  }

  // why: a browser opens at most 6 connections per origin; jobs that hold one open would starve the
  // pings. So at most MAX_ACTIVE jobs per server are in flight, and the template's are not held open:
  // it answers 202 at once and the page polls the job until it is final.
  function fire(t) {
    if (!demo.types[work.value]) return;
    var count = Math.max(1, Math.min(64, Number(document.getElementById('count').value) || 1));
    for (var i = 0; i < count; i++) t.waiting.push(jobInput());
    t.sent += count;
    pump(t);
  }

  function pump(t) {
    while (t.active < MAX_ACTIVE && t.waiting.length) {
      var job = t.waiting.shift();
      t.active++;
      submit(t, job)
        .then(function (ok) { if (ok) t.done++; else t.failed++; }, function () { t.failed++; })
        .then(function () { t.active--; pump(t); });
    }
  }

  function submit(t, job) {
    return fetch(t.url + '/v1/jobs/' + job.type, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(job.input) })
      .then(function (r) { return r.json(); })
      .then(function (view) { return view.status === 'queued' || view.status === 'active' ? settle(t, view.id) : view.status === 'completed'; });
  }

  function settle(t, id) {
    return new Promise(function (resolve) {
      function check() {
        fetch(t.url + '/v1/jobs/' + id, { cache: 'no-store' })
          .then(function (r) { return r.json(); })
          .then(function (view) {
            if (view.status === 'completed') resolve(true);
            else if (view.status === 'failed' || view.status === 'cancelled' || view.status === 'expired') resolve(false);
            else setTimeout(check, POLL_MS);
          })
          .catch(function () { resolve(false); });
      }
      setTimeout(check, POLL_MS);
    });
  }

  function pct(values, p) {
    if (!values.length) return NaN;
    var s = values.slice().sort(function (a, b) { return a - b; });
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
  }

  function fmt(ms) {
    if (!isFinite(ms)) return '–';
    return ms >= 100 ? Math.round(ms) + ' ms' : ms.toFixed(ms >= 10 ? 1 : 2) + ' ms';
  }

  function draw(t, now) {
    var c = t.canvas, dpr = window.devicePixelRatio || 1;
    var w = c.clientWidth || 560, h = c.clientHeight || 260;
    if (c.width !== Math.round(w * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    var left = 52, right = 8, top = 8, bottom = 22, pw = w - left - right, ph = h - top - bottom;
    var lo = Math.log10(FLOOR_MS), hi = Math.log10(CEIL_MS);
    function x(tm) { return left + pw * (1 - (now - tm) / WINDOW_MS); }
    function y(ms) { var v = Math.log10(Math.min(CEIL_MS, Math.max(FLOOR_MS, ms))); return top + ph * (1 - (v - lo) / (hi - lo)); }

    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#6b7685';
    g.strokeStyle = '#e2e8f0';
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    [0.1, 1, 10, 100, 1000, 10000].forEach(function (ms) {
      var yy = Math.round(y(ms)) + 0.5;
      g.beginPath(); g.moveTo(left, yy); g.lineTo(left + pw, yy); g.stroke();
      g.fillText(ms >= 1000 ? ms / 1000 + ' s' : ms + ' ms', left - 6, yy);
    });
    g.textAlign = 'center';
    g.textBaseline = 'alphabetic';
    for (var s = 0; s <= 60; s += 15) g.fillText(s === 0 ? 'now' : '-' + s + ' s', x(now - s * 1000), h - 6);

    function line(points, value, color, width) {
      g.strokeStyle = color; g.lineWidth = width; g.beginPath();
      points.forEach(function (p, i) { var px = x(p.t), py = y(value(p)); if (i) g.lineTo(px, py); else g.moveTo(px, py); });
      g.stroke();
    }
    line(t.loops, function (p) { return p.max; }, '#f6ad55', 1);
    line(t.loops, function (p) { return p.p99; }, '#dd6b20', 2);
    line(t.pings, function (p) { return p.ms; }, '#2b6cb0', 1.5);
    // A ping still waiting for its answer is drawn at its age: a blocked loop shows while it blocks.
    if (t.pingBusy && now - t.pingStarted > PING_MS) {
      g.fillStyle = '#c53030';
      g.beginPath(); g.arc(x(now), y(now - t.pingStarted), 4, 0, 2 * Math.PI); g.fill();
    }
    t.draws++;
  }

  function stats(t, now) {
    if (!t.enabled) return;
    var recent = t.pings.filter(function (p) { return p.t > now - 10000; }).map(function (p) { return p.ms; });
    var loop = t.loops[t.loops.length - 1];
    t.statsEl.innerHTML = 'ping (last 10 s) p50 <b>' + fmt(pct(recent, 50)) + '</b>, p99 <b>' + fmt(pct(recent, 99)) +
      '</b> · loop delay p99 <b>' + (loop ? fmt(loop.p99) : '–') + '</b>, max <b>' + (loop ? fmt(loop.max) : '–') + '</b>' +
      (t.error ? ' · <span class="note">' + t.error + '</span>' : '');
    t.jobsEl.textContent = t.sent ? t.done + ' / ' + t.sent + ' jobs done' + (t.failed ? ', ' + t.failed + ' failed' : '') : '';
  }

  function tick() {
    var now = performance.now();
    targets.forEach(function (t) {
      if (!t.enabled) return;
      ping(t);
      readLoop(t);
      prune(t.pings, now);
      prune(t.loops, now);
      draw(t, now);
      stats(t, now);
    });
  }

  tick();
  setInterval(tick, PING_MS);
})();
`;
