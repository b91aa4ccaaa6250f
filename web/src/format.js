// Formatting of numbers, times and durations for display. Pure functions.

const intFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
});
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const shortDate = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });

export const DASH = '—';

export function int(n) {
  return Number.isFinite(n) ? intFormat.format(n) : DASH;
}

// A metric value: 4 significant digits, no exponent for everyday magnitudes.
export function metric(v) {
  if (!Number.isFinite(v)) return DASH;
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

// Accuracy-like values in [0, 1] as a percentage.
export function percent(v) {
  return Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : DASH;
}

export function rate(v, unit) {
  if (!Number.isFinite(v) || v <= 0) return DASH;
  const text = v >= 100 ? intFormat.format(v) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return unit ? `${text} ${unit}` : text;
}

export function bytes(n) {
  if (!Number.isFinite(n)) return DASH;
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? n : n.toFixed(n >= 10 ? 0 : 1)} ${units[i]}`;
}

// Seconds as "45s", "3m 05s", "2h 04m", "3d 4h".
export function duration(s) {
  if (!Number.isFinite(s) || s < 0) return DASH;
  s = Math.round(s);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

// Seconds since the epoch -> full local date and time (for titles and tables).
export function absolute(t) {
  return Number.isFinite(t) && t > 0 ? dateTime.format(new Date(t * 1000)) : DASH;
}

// Seconds since the epoch -> the time of day if today, else a short date and time.
export function clock(t) {
  if (!Number.isFinite(t) || t <= 0) return DASH;
  const d = new Date(t * 1000);
  return d.toDateString() === new Date().toDateString() ? timeOfDay.format(d) : shortDate.format(d);
}

// Seconds since the epoch -> "just now", "5 min ago", "14:02", or the date for older ones.
export function relative(t, now = Date.now() / 1000) {
  if (!Number.isFinite(t) || t <= 0) return DASH;
  const d = now - t;
  if (d < 10) return 'just now';
  if (d < 60) return `${Math.floor(d)} s ago`;
  if (d < 3600) return `${Math.floor(d / 60)} min ago`;
  if (d < 12 * 3600 && new Date(t * 1000).getDate() === new Date(now * 1000).getDate()) {
    return `today ${timeOnly.format(new Date(t * 1000))}`;
  }
  return dateTime.format(new Date(t * 1000));
}

// A metric by tag: accuracies as percentages, the rest as plain numbers.
export function byTag(tag, v) {
  return /accuracy$/.test(tag) ? percent(v) : metric(v);
}
