// The submit form's task controls (docs/job-spec.md#task, #decision-threshold): classification
// or regression, a regression job's loss, and a two-class classifier's decision threshold. They
// rewrite the spec's own fields, so the JSON stays the one truth the form submits.
import { h } from './dom.js';

export const LOSSES = ['mse', 'mae', 'huber'];

// `spec` for `task` ('classification' or 'regression'), with a regression job's `loss` and a
// classifier's decision `threshold` ('' or a number; only for a two-class dataset, `binary`):
// the fields the other task has are removed (a classifier's class weights, label smoothing and
// threshold; a regression job's loss), and a regression job's logging tensors lose accuracy,
// which it does not have. Returns a new spec.
export function applyTask(spec, { task, loss, threshold, binary }) {
  const s = structuredClone(spec);
  const logging = s.hooks && s.hooks.logging;
  const tensors = logging && Array.isArray(logging.tensors) ? logging.tensors : null;
  if (task === 'regression') {
    s.task = 'regression';
    s.loss = LOSSES.includes(loss) ? loss : 'mse';
    if (s.loss !== 'huber') delete s.huber_delta;
    for (const k of ['decision_threshold', 'class_weights', 'label_smoothing']) delete s[k];
    if (tensors) logging.tensors = tensors.filter((t) => t !== 'accuracy');
    return s;
  }
  delete s.task;
  delete s.loss;
  delete s.huber_delta;
  const t = threshold === '' || threshold == null ? Number.NaN : Number(threshold);
  if (binary && Number.isFinite(t)) s.decision_threshold = t;
  else delete s.decision_threshold;
  if (tensors && tensors.length === 2 && tensors[0] === 'global_step' && tensors[1] === 'loss') tensors.push('accuracy');
  return s;
}

// The controls; `onChange` is called when the user changes one.
export class TaskPicker {
  constructor(onChange) {
    this.task = h('select', { id: 'task-select', name: 'task', class: 'input', onchange: () => { this.sync(); onChange(); } },
      h('option', { value: 'classification' }, 'classification'), h('option', { value: 'regression' }, 'regression'));
    this.loss = h('select', { id: 'loss-select', name: 'loss', class: 'input', onchange: onChange },
      LOSSES.map((l) => h('option', { value: l }, l)));
    this.threshold = h('input', {
      id: 'threshold-input', name: 'decision_threshold', type: 'number', class: 'input input-small',
      min: '0.01', max: '0.99', step: '0.01', placeholder: '0.5', onchange: onChange,
      title: "Class 1's probability above which it is predicted (0.5: the most probable class)",
    });
    this.lossField = h('span', { class: 'task-field', hidden: true },
      h('label', { for: 'loss-select' }, 'Loss'), this.loss);
    this.thresholdField = h('span', { class: 'task-field', hidden: true },
      h('label', { for: 'threshold-input' }, 'Decision threshold'), this.threshold);
    this.el = h('div', { class: 'task-pick dataset-pick' },
      h('label', { for: 'task-select' }, 'Task'), this.task, this.lossField, this.thresholdField);
    this.dataset = null;
  }

  // Fits the controls to dataset `d` (its `tasks`; a two-class one takes a threshold): a task it
  // cannot serve is disabled, and the other one chosen.
  fit(d) {
    this.dataset = d || null;
    const tasks = d && Array.isArray(d.tasks) && d.tasks.length ? d.tasks : ['classification'];
    for (const o of this.task.options) o.disabled = !tasks.includes(o.value);
    if (!tasks.includes(this.task.value)) this.task.value = tasks[0];
    this.sync();
  }

  sync() {
    const regression = this.task.value === 'regression';
    this.lossField.hidden = !regression;
    this.thresholdField.hidden = regression || !this.binary();
  }

  binary() {
    return Boolean(this.dataset && this.dataset.num_classes === 2);
  }

  // The controls as `spec` has them (a job copied, a draft).
  read(spec) {
    if (!spec || typeof spec !== 'object') return;
    this.task.value = spec.task === 'regression' ? 'regression' : 'classification';
    this.loss.value = LOSSES.includes(spec.loss) ? spec.loss : 'mse';
    this.threshold.value = typeof spec.decision_threshold === 'number' ? String(spec.decision_threshold) : '';
    this.sync();
  }

  apply(spec) {
    return applyTask(spec, {
      task: this.task.value, loss: this.loss.value, threshold: this.threshold.value, binary: this.binary(),
    });
  }
}
