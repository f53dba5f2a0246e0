import { createHash } from 'node:crypto';
import { DEMO_SCRIPT } from './demo.script';

const STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2430; background: #fafbfc; }
  h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
  p.lead { margin: 0 0 1rem; max-width: 70rem; color: #4a5568; }
  .controls { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; margin-bottom: 1rem; }
  .controls label { display: flex; gap: .4rem; align-items: center; }
  .controls input { width: 6rem; }
  .panels { display: flex; gap: 1.2rem; flex-wrap: wrap; }
  section { background: #fff; border: 1px solid #d9dee5; border-radius: 6px; padding: .8rem 1rem; flex: 1 1 30rem; min-width: 24rem; }
  section h2 { font-size: 1rem; margin: 0; }
  section .sub { color: #6b7685; font-size: .85rem; margin: .1rem 0 .5rem; }
  section .bar { display: flex; gap: .8rem; align-items: center; margin-bottom: .5rem; }
  button { font: inherit; padding: .3rem .8rem; border-radius: 4px; border: 1px solid #2b6cb0; background: #2b6cb0; color: #fff; cursor: pointer; }
  button:disabled { background: #a0aec0; border-color: #a0aec0; cursor: default; }
  canvas { width: 100%; height: 260px; display: block; }
  .stats { font-variant-numeric: tabular-nums; color: #2d3748; margin-top: .4rem; font-size: .9rem; }
  .stats b { font-weight: 600; }
  .note { color: #b7791f; font-size: .85rem; }
  .legend span { display: inline-block; margin-right: 1rem; font-size: .85rem; }
  .legend i { display: inline-block; width: .8rem; height: .25rem; vertical-align: middle; margin-right: .3rem; }
  .legend .ping { background: #2b6cb0; }
  .legend .p99 { background: #dd6b20; }
  .legend .max { background: #f6ad55; }
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page's own Content-Security-Policy (the API's default, `default-src 'none'`, would block it):
 * only its own inline script and style, by hash; fetches to itself and to the baseline, whose origin
 * comes from `?baseline=` (so any http(s) origin).
 */
export const DEMO_CSP = [
  "default-src 'none'",
  `script-src ${sha256(DEMO_SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self' http: https:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The /demo page: one self-contained HTML document (inline CSS and script, no CDN: it must work
 * offline). Two panels, this API and a baseline, each plotting ping latency and event-loop delay.
 */
export const DEMO_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nest-offload · event loop, live</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Event loop, live: offloaded vs in-handler</h1>
<p class="lead">Five times a second the page pings each server; once a second it reads the server's event-loop delay
(<code>perf_hooks.monitorEventLoopDelay</code>, p99 of the last second, beyond the 10 ms sampling timer).
Fire CPU jobs at each: this API hands them to the worker pool through BullMQ, so its ping stays flat;
the baseline computes them in its request handler, so everything it serves waits.</p>
<div class="controls">
  <label>Work <select id="work"><option value="">loading the job types…</option></select></label>
  <label>Size <input id="size" type="number" min="1" value="1"></label>
  <label>Jobs per click <input id="count" type="number" min="1" max="64" value="8"></label>
  <span class="legend"><span><i class="ping"></i>ping latency</span><span><i class="p99"></i>event-loop delay p99</span><span><i class="max"></i>event-loop delay max</span></span>
</div>
<div class="panels">
  <section id="template">
    <h2>Template API</h2>
    <div class="sub">HTTP → BullMQ → worker → piscina thread</div>
    <div class="bar"><button data-fire>Fire CPU jobs</button><span data-jobs></span></div>
    <canvas></canvas>
    <div class="stats" data-stats>waiting for samples…</div>
  </section>
  <section id="baseline">
    <h2>In-handler baseline</h2>
    <div class="sub" data-where>NestJS computing the same job inside its request handler</div>
    <div class="bar"><button data-fire>Fire CPU jobs</button><span data-jobs></span></div>
    <canvas></canvas>
    <div class="stats" data-stats>waiting for samples…</div>
  </section>
</div>
<script>${DEMO_SCRIPT}</script>
</body>
</html>
`;
