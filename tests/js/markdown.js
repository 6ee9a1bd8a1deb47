// Fenced code blocks of a Markdown file and the test markers above them (the convention is
// described at the top of readme.test.js). Shared by readme.test.js, which runs the node / ts / sh
// blocks, and tests/package, which builds the README's browser apps (marker `browser [app=NAME] file=...`).

/**
 * The fenced blocks of a Markdown text: { file, line (1-based, of the fence), lang, code, marker }
 * with marker = { kind, files, id, reason, file, app } from the comment right above, or null
 * (app: a browser block's app, "main" unless app=NAME says).
 */
export function parseBlocks(text, file) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    let j = i + 1;
    while (j < lines.length && !(lines[j].trim().startsWith(fence) && lines[j].trim().replace(/[`~]/g, '') === '')) j++;
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a fence that is never closed`);
    const code = lines.slice(i + 1, j).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
    blocks.push({ file, line: i + 1, lang: info.toLowerCase(), code, marker: parseMarker(lines[i - 1] ?? '', file, i) });
    i = j;
  }
  return blocks;
}

function parseMarker(line, file, index) {
  const m = /^\s*<!--\s*test:\s*(.*?)\s*-->\s*$/.exec(line);
  if (!m) return null;
  const skip = /^skip\s*\((.+)\)$/.exec(m[1]);
  if (skip) return { kind: 'skip', reason: skip[1], files: [], id: null };
  const [kind, ...attrs] = m[1].split(/\s+/);
  if (!['node', 'ts', 'sh', 'stdout', 'browser'].includes(kind)) throw new Error(`${file}:${index}: unknown marker "${m[1]}" (node, ts, sh, stdout, browser, skip (why))`);
  const marker = { kind, files: [], id: null, reason: null, file: null, app: kind === 'browser' ? 'main' : null };
  for (const attr of attrs) {
    const [key, value] = attr.split('=');
    if (key === 'files') {
      marker.files = value.split(',').map((spec) => {
        const [as, from = as] = spec.split(':');
        return { as, from };
      });
    } else if (key === 'id') {
      marker.id = value;
    } else if (key === 'file' && kind === 'browser') {
      marker.file = value;
    } else if (key === 'app' && kind === 'browser' && /^[a-z][a-z0-9-]*$/.test(value ?? '')) {
      marker.app = value;
    } else {
      throw new Error(`${file}:${index}: unknown marker attribute "${attr}" (${kind === 'browser' ? 'file=, app=' : 'files=, id='})`);
    }
  }
  if (kind === 'browser' && !marker.file) throw new Error(`${file}:${index}: a browser block needs file=<path in the app>`);
  return marker;
}
