// Finds where a field named by a JSON path ("hooks.checkpoint.every_steps", "model.layers[3].units")
// is written in a JSON text, so an error about it can be shown next to it. Tolerates broken JSON
// (it scans tokens, it does not parse). Returns the offset of the deepest part of the path found:
// the key of an object member, or the start of an array element; 0 when nothing matches.

export function parsePath(path) {
  const parts = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  let m;
  while ((m = re.exec(path))) parts.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return parts;
}

export function locateField(text, path) {
  const want = parsePath(path);
  if (!want.length) return { offset: 0, depth: 0 };
  let best = { offset: 0, depth: 0 };
  const stack = []; // {type: '{' | '[', key, index}
  const matches = () => {
    // How many leading parts of `want` the current position equals (only a full prefix counts).
    if (stack.length > want.length) return 0;
    for (let i = 0; i < stack.length; i++) {
      const part = stack[i].type === '{' ? stack[i].key : stack[i].index;
      if (part !== want[i]) return 0;
    }
    return stack.length;
  };
  const startValue = (pos) => {
    const top = stack[stack.length - 1];
    if (top && top.type === '[') {
      top.index++;
      const d = matches();
      if (d > best.depth) best = { offset: pos, depth: d };
    }
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      let s = '';
      while (j < text.length && text[j] !== '"') {
        if (text[j] === '\\' && j + 1 < text.length) {
          s += text[j + 1];
          j += 2;
        } else {
          s += text[j++];
        }
      }
      let k = j + 1;
      while (k < text.length && /\s/.test(text[k])) k++;
      const top = stack[stack.length - 1];
      if (text[k] === ':' && top && top.type === '{') {
        top.key = s;
        const d = matches();
        if (d > best.depth) best = { offset: i, depth: d };
      } else {
        startValue(i);
      }
      i = j + 1;
    } else if (c === '{' || c === '[') {
      startValue(i);
      stack.push({ type: c, key: undefined, index: -1 });
      i++;
    } else if (c === '}' || c === ']') {
      stack.pop();
      i++;
    } else if (/[-0-9tfn]/.test(c)) {
      startValue(i);
      while (i < text.length && /[^,\]}\s]/.test(text[i])) i++;
    } else {
      i++;
    }
    if (best.depth === want.length) break;
  }
  return best;
}

// 1-based line of a character offset.
export function lineOf(text, offset) {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text[i] === '\n') line++;
  return line;
}
