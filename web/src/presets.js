// The submit form's starting points: the three tutorial models as in examples/*.json.
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
};
