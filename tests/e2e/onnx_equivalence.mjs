// onnx_equivalence.mjs MODEL.onnx PREFIX: runs an exported model in onnxruntime (npm
// onnxruntime-node from web/node_modules, CPU only; a runtime we did not write) on the raw
// examples onnx_predict wrote to PREFIX.input.f32 and compares its probabilities with the
// engine's (PREFIX.probs.f32). Prints one JSON line: the examples, how many argmaxes agree, how
// many of the graph's "label" agree with the engine's predicted classes (a two-class model's
// decision threshold applied; PREFIX.json's "predicted") and how many differ from the arg-max,
// the largest |probability difference|, both accuracies (of the predicted classes), and the
// graph's input and output names
// and shapes as the runtime sees them. A table with categorical columns also feeds the graph's
// string input "categorical" from PREFIX.categorical.json. With PREFIX.infer.f32 (the daemon's /infer answers on
// the same examples, serving_test.py), the same three numbers for /infer against onnxruntime.
// A regression model (meta.task) is compared on its "prediction": the largest difference relative
// to max(1, |prediction|) and both RMSEs against the targets, in place of the argmaxes and
// accuracies. onnx_export_test.py and serving_test.py judge the numbers.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, '../../web/package.json'));
const ort = require('onnxruntime-node');

const [model, prefix] = process.argv.slice(2);
if (!model || !prefix) throw new Error('usage: onnx_equivalence.mjs MODEL.onnx PREFIX');
const meta = JSON.parse(fs.readFileSync(`${prefix}.json`, 'utf8'));
const floats = (file) => {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};
const input = floats(`${prefix}.input.f32`);
// A table with categorical columns: their values as strings, one array per example.
const categorical = meta.categorical > 0
  ? JSON.parse(fs.readFileSync(`${prefix}.categorical.json`, 'utf8')) : null;
const engineProbs = floats(`${prefix}.probs.f32`);
const inferProbs = fs.existsSync(`${prefix}.infer.f32`) ? floats(`${prefix}.infer.f32`) : null;
if (inferProbs && inferProbs.length !== engineProbs.length) throw new Error(`${prefix}.infer.f32: size`);
const { n, classes } = meta;
const exampleSize = meta.example_shape.reduce((a, b) => a * b, 1);
if (input.length !== n * exampleSize || engineProbs.length !== n * classes) {
  throw new Error(`${prefix}: ${input.length} inputs and ${engineProbs.length} probabilities for ${n} examples`);
}

const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
const regression = meta.task === 'regression';
const feedsOf = (first, m) => {
  const x = input.subarray(first * exampleSize, (first + m) * exampleSize);
  const feeds = { input: new ort.Tensor('float32', x, [m, ...meta.example_shape]) };
  if (categorical) {
    feeds.categorical = new ort.Tensor('string', categorical.slice(first, first + m).flat(), [m, meta.categorical]);
  }
  return feeds;
};
if (regression) {
  let maxRel = 0, ortSse = 0, engineSse = 0, inferMaxRel = 0, inferSse = 0;
  for (let first = 0; first < n; first += 1000) {
    const m = Math.min(1000, n - first);
    const pred = (await session.run(feedsOf(first, m))).prediction.data;
    if (pred.length !== m) throw new Error('output size');
    for (let i = 0; i < m; ++i) {
      const j = first + i, y = meta.targets[j], e = engineProbs[j];
      maxRel = Math.max(maxRel, Math.abs(pred[i] - e) / Math.max(1, Math.abs(e)));
      ortSse += (pred[i] - y) ** 2;
      engineSse += (e - y) ** 2;
      if (inferProbs) {
        inferMaxRel = Math.max(inferMaxRel, Math.abs(pred[i] - inferProbs[j]) / Math.max(1, Math.abs(pred[i])));
        inferSse += (inferProbs[j] - y) ** 2;
      }
    }
  }
  console.log(JSON.stringify({
    n, max_rel_diff: maxRel, ort_rmse: Math.sqrt(ortSse / n), engine_rmse: Math.sqrt(engineSse / n),
    inputs: session.inputNames, outputs: session.outputNames,
    ...(inferProbs ? { infer_max_rel_diff: inferMaxRel, infer_rmse: Math.sqrt(inferSse / n) } : {}),
  }));
  process.exit(0);
}
// The predicted classes: the graph's "label" against the engine's (meta.predicted,
// TrainedModel::PredictedClasses) and, with PREFIX.infer_labels.json, /infer's "label".
const inferLabels = fs.existsSync(`${prefix}.infer_labels.json`)
  ? JSON.parse(fs.readFileSync(`${prefix}.infer_labels.json`, 'utf8')) : null;
const argmax = (p, i) => {
  let best = 0;
  for (let c = 1; c < classes; ++c) if (p[i * classes + c] > p[i * classes + best]) best = c;
  return best;
};
// In batches of 1000: the whole split in one run would hold the CNN's activations for all of it.
let agree = 0, ortCorrect = 0, engineCorrect = 0, maxDiff = 0;
let inferAgree = 0, inferCorrect = 0, inferMaxDiff = 0;
let labelAgree = 0, inferLabelAgree = 0, ortNotArgmax = 0;
const batch = 1000;
for (let first = 0; first < n; first += batch) {
  const m = Math.min(batch, n - first);
  const out = await session.run(feedsOf(first, m));
  const probs = out.probabilities.data;
  const logits = out.logits.data;
  const label = out.label.data;  // int64: BigInt64Array
  if (probs.length !== m * classes || logits.length !== m * classes || label.length !== m) {
    throw new Error('output size');
  }
  for (let i = 0; i < m; ++i) {
    const j = first + i;
    const a = argmax(probs, i);
    const e = argmax(engineProbs.subarray(first * classes), i);
    const l = Number(label[i]);
    if (a === e) ++agree;
    if (l !== a) ++ortNotArgmax;
    if (l === meta.predicted[j]) ++labelAgree;
    if (inferLabels && inferLabels[j] === l) ++inferLabelAgree;
    // The accuracies count the predicted classes, as the trainer's evaluation does.
    if (l === meta.labels[j]) ++ortCorrect;
    if (meta.predicted[j] === meta.labels[j]) ++engineCorrect;
    for (let c = 0; c < classes; ++c) {
      maxDiff = Math.max(maxDiff, Math.abs(probs[i * classes + c] - engineProbs[j * classes + c]));
    }
    if (inferProbs) {
      const f = argmax(inferProbs.subarray(first * classes), i);
      if (f === a) ++inferAgree;
      if ((inferLabels ? inferLabels[j] : f) === meta.labels[j]) ++inferCorrect;
      for (let c = 0; c < classes; ++c) {
        inferMaxDiff = Math.max(inferMaxDiff, Math.abs(probs[i * classes + c] - inferProbs[j * classes + c]));
      }
    }
  }
}
console.log(JSON.stringify({
  n, agree, max_prob_diff: maxDiff, label_agree: labelAgree, not_argmax: meta.not_argmax,
  ort_not_argmax: ortNotArgmax,
  ort_accuracy: ortCorrect / n, engine_accuracy: engineCorrect / n,
  inputs: session.inputNames, outputs: session.outputNames,
  ...(inferLabels ? { infer_label_agree: inferLabelAgree } : {}),
  ...(inferProbs ? { infer_agree: inferAgree, infer_max_prob_diff: inferMaxDiff, infer_accuracy: inferCorrect / n } : {}),
}));
