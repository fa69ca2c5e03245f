// laz-perf (npm `laz-perf`, LASzip compiled to WASM) decoding a LAZ file, for bench/results/laz_read.md:
// the independent decoder's points/s beside ours (bench_laz FILE.laz). One thread (WASM).
//   npm install laz-perf@0.0.7 && node bench/laz_perf_read.js FILE.laz [RUNS=3]
const fs = require('fs');
const { createLazPerf } = require('laz-perf');
(async () => {
  const [, , path, runsArg] = process.argv;
  const runs = Number(runsArg || 3);
  const L = await createLazPerf();
  const buf = fs.readFileSync(path);
  const p = L._malloc(buf.length);
  L.HEAPU8.set(buf, p);
  const times = [];
  let n = 0;
  for (let r = 0; r <= runs; ++r) {  // the first is a warm-up
    const t0 = process.hrtime.bigint();
    const z = new L.LASZip();
    z.open(p, buf.length);
    n = z.getCount();
    const q = L._malloc(z.getPointLength());
    for (let i = 0; i < n; i++) z.getPoint(q);
    L._free(q);
    z.delete();
    if (r > 0) times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((a, b) => a - b);
  const s = times[Math.floor(times.length / 2)];
  console.log(`| ${path.split('/').pop()} | laz-perf 0.0.7 (WASM, node ${process.version}) | ${n} | ${(s * 1e3).toFixed(1)} ms | ${(n / s / 1e6).toFixed(2)} M pts/s |`);
})();
