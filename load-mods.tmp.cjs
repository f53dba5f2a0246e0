const fs = require('fs');
const urls = fs.readFileSync(process.argv[2], 'utf8').split('\n').slice(1).filter((u) => u.startsWith('file://') && !u.includes('/dist/'));
const pkgs = new Set();
for (const u of urls) { const m = u.match(/node_modules\/((@[^/]+\/)?[^/]+)\//); if (m) pkgs.add(m[1]); }
require('reflect-metadata');
const t = process.cpuUsage();
const res = [];
for (const p of pkgs) { const a = process.cpuUsage(); try { require(p); } catch (e) { } const u = process.cpuUsage(a); res.push([p, (u.user + u.system) / 1000]); }
const u = process.cpuUsage(t);
res.sort((a, b) => b[1] - a[1]); console.log(res.slice(0, 15).map(([p, ms]) => `${ms.toFixed(0).padStart(5)} ${p}`).join('\n'));
console.log('all packages', ((u.user + u.system) / 1000).toFixed(0), 'ms', pkgs.size, 'packages');
