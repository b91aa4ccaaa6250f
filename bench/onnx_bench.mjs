// onnx_bench.mjs MODEL.onnx BATCH SECONDS [THREADS]: the exported file in onnxruntime
// (npm onnxruntime-node, CPU, in-process): session.run on batches of BATCH raw examples for
// SECONDS with THREADS intra-op threads (default 2), one call at a time. Prints one JSON line like
// predict_bench's: {"batch", "threads", "calls", "examples_per_sec", "p50_ms", "p99_ms"}.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, '../web/package.json'));
const ort = require('onnxruntime-node');

const [model, batchText, secondsText, threadsText] = process.argv.slice(2);
const batch = Number(batchText), seconds = Number(secondsText), threads = Number(threadsText || 2);
if (!model || !(batch >= 1) || !(seconds > 0)) throw new Error('usage: onnx_bench.mjs MODEL BATCH SECONDS [THREADS]');
const session = await ort.InferenceSession.create(model, {
  executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
});
// The input's example shape from a probe: the graph's input is [batch, ...].
const dims = JSON.parse(process.env.EXAMPLE_SHAPE || '[28,28,1]');
const size = dims.reduce((a, b) => a * b, 1);
const x = new Float32Array(batch * size);
for (let i = 0; i < x.length; ++i) x[i] = Math.floor(Math.random() * 256);
const feeds = { input: new ort.Tensor('float32', x, [batch, ...dims]) };
await session.run(feeds);  // warm-up, not counted
const ms = [];
const start = performance.now();
while (performance.now() - start < seconds * 1000) {
  const t0 = performance.now();
  await session.run(feeds, ['probabilities']);
  ms.push(performance.now() - t0);
}
const total = (performance.now() - start) / 1000;
ms.sort((a, b) => a - b);
const pct = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))];
console.log(JSON.stringify({
  batch, threads, calls: ms.length, examples_per_sec: ms.length * batch / total,
  p50_ms: pct(0.5), p99_ms: pct(0.99),
}));
