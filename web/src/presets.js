// The submit form's starting points: the three tutorial models as in examples/*.json, and a
// ResNet-20 with the recipe image models train with (examples/resnet20-augmented.json).
const hooks = (every) => ({
  checkpoint: { every_steps: every * 10, max_to_keep: 5 },
  summary: { every_steps: every },
  step_counter: { every_steps: every },
  logging: { every_n_iter: every, tensors: ['global_step', 'loss', 'accuracy'] },
  nan_guard: { fail: true },
  evaluation: { every_steps: every * 10, split: 'validation' },
  final_eval: { split: 'test' },
});

export const PRESETS = {
  softmax: {
    about: 'Softmax regression: one dense layer. Trains in seconds.',
    spec: {
      name: 'softmax-fashion-mnist',
      dataset: { name: 'fashion-mnist', validation_size: 5000 },
      model: 'softmax',
      optimizer: { type: 'adam', learning_rate: 1e-3 },
      batch_size: 100,
      max_steps: 10000,
      seed: 42,
      hooks: hooks(50),
    },
  },
  mlp: {
    about: 'Two hidden layers (128, 32). A minute or so.',
    spec: {
      name: 'mlp-fashion-mnist',
      dataset: { name: 'fashion-mnist', validation_size: 5000 },
      model: 'mlp',
      optimizer: { type: 'adam', learning_rate: 1e-3 },
      batch_size: 100,
      max_steps: 10000,
      seed: 42,
      hooks: hooks(50),
    },
  },
  cnn: {
    about: 'The Deep MNIST CNN: two conv layers, dense 1024, dropout. Tens of minutes.',
    spec: {
      name: 'cnn-fashion-mnist',
      dataset: { name: 'fashion-mnist', validation_size: 5000 },
      model: 'cnn',
      optimizer: { type: 'adam', learning_rate: 1e-4 },
      batch_size: 50,
      max_steps: 20000,
      seed: 42,
      hooks: hooks(100),
    },
  },
  resnet20: {
    about: 'ResNet-20 (He et al.): batch norm, residual blocks, global pooling; random crop and flip, AdamW with a cosine schedule. Hours on 2 cores.',
    spec: {
      name: 'resnet20-fashion-mnist',
      dataset: { name: 'fashion-mnist', validation_size: 5000, normalize: 'per_channel' },
      model: 'resnet20',
      optimizer: {
        type: 'adamw', weight_decay: 0.05,
        learning_rate: { type: 'cosine', learning_rate: 0.003, warmup_steps: 200, decay_steps: 8400, alpha: 0 },
      },
      label_smoothing: 0.1,
      augmentation: { random_crop: { padding: 4 }, horizontal_flip: true },
      batch_size: 128,
      max_steps: 8600,
      seed: 42,
      hooks: hooks(100),
    },
  },
};

// Presets whose layers convolve: they need images.
const CONVOLVES = new Set(['cnn', 'resnet20']);

// Whether a dataset's examples are images ([H, W, C]) rather than table rows ([F]).
export function isImages(dataset) {
  return Array.isArray(dataset.example_shape) && dataset.example_shape.length === 3;
}

// Why a preset cannot train on a dataset ('' when it can). The CNN's convolutions and pooling
// slide over neighbouring pixels; a table's features have no neighbours, so it takes softmax or
// mlp. (The presets' last layer is fitted to the dataset's class count by the daemon.)
export function unfitReason(preset, dataset) {
  if (!CONVOLVES.has(preset) || !dataset || isImages(dataset)) return '';
  return `${preset} needs images ([H, W, C]): its convolutions slide over neighbouring pixels, and ${dataset.name} is a table of ${dataset.example_shape[0]} features with no neighbours. Softmax or mlp fit it.`;
}

// A preset's spec for a dataset: its name in the job's name and dataset. An IDX directory keeps
// the preset's validation_size (5000, TF's default); an upload leaves it out, so the daemon uses
// the file's own validation split or a tenth of its training data. A batch is at most the
// training split (the daemon refuses a larger one).
export function specFor(preset, dataset) {
  const spec = structuredClone(PRESETS[preset].spec);
  if (!dataset) return spec;
  spec.name = `${preset}-${dataset.name}`.slice(0, 100);
  spec.dataset = dataset.format === 'idx' ? { ...spec.dataset, name: dataset.name } : { name: dataset.name };
  const train = dataset.splits && dataset.splits.train;
  if (train > 0 && train < spec.batch_size) spec.batch_size = train;
  if (spec.augmentation && isImages(dataset)) {
    // The daemon takes a padding of at most half the image; 4 (CIFAR's) from 8 pixels up.
    const padding = Math.min(4, Math.floor(Math.min(dataset.example_shape[0], dataset.example_shape[1]) / 2));
    if (padding >= 1) spec.augmentation.random_crop.padding = padding;
    else delete spec.augmentation.random_crop;
  }
  // Per-channel normalization is for uint8 images (an IDX directory, or an upload of uint8).
  if (spec.dataset.normalize === undefined && PRESETS[preset].spec.dataset.normalize &&
      (dataset.format === 'idx' || dataset.element_type === 'uint8')) {
    spec.dataset.normalize = PRESETS[preset].spec.dataset.normalize;
  }
  return spec;
}
