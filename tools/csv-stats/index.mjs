// csv-stats tool: per-column statistics of CSV text (RFC 4180 quoting); sandboxed tool code, untrusted side.

/**
 * Parse CSV text into rows of fields. Follows RFC 4180: fields may be quoted with ", a quote inside a
 * quoted field is written "", quoted fields may hold the delimiter and line breaks; records end at
 * LF or CRLF. A final line break is optional.
 * @throws Error for an unterminated quoted field or text after a closing quote.
 */
export function parseCsv(text, delimiter = ',') {
  const rows = [];
  let row = [];
  let field = '';
  let i = 0;
  let line = 1;
  let fieldStarted = false;
  const n = text.length;
  const endField = () => {
    row.push(field);
    field = '';
    fieldStarted = false;
  };
  const endRow = () => {
    endField();
    rows.push(row);
    row = [];
  };
  while (i < n) {
    const c = text[i];
    if (c === '"' && !fieldStarted && field === '') {
      const startLine = line;
      i++;
      for (;;) {
        if (i >= n) throw new Error(`unterminated quoted field starting on line ${startLine}`);
        const q = text[i];
        if (q === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (q === '\n') line++;
        field += q;
        i++;
      }
      fieldStarted = true;
      const next = text[i];
      if (i < n && next !== delimiter && next !== '\n' && next !== '\r') throw new Error(`unexpected text after a closing quote on line ${line}`);
      continue;
    }
    if (c === delimiter) {
      endField();
      i++;
      continue;
    }
    if (c === '\r' && text[i + 1] === '\n') {
      i++;
      continue;
    }
    if (c === '\n') {
      endRow();
      line++;
      i++;
      continue;
    }
    field += c;
    fieldStarted = true;
    i++;
  }
  if (field !== '' || fieldStarted || row.length > 0) endRow();
  return rows;
}

const NUMBER_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function median(sorted) {
  const m = sorted.length >> 1;
  return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
}

function round(x) {
  return Math.round(x * 1e6) / 1e6;
}

/**
 * Column statistics. A column is numeric when every non-empty value is a decimal number; then
 * count/mean/min/max/median/stddev (population); otherwise count/distinct/top values.
 * Empty (after trimming) values count as missing.
 */
export function csvStats({ csv, delimiter = ',', header = true, top = 5 }) {
  if (typeof delimiter !== 'string' || [...delimiter].length !== 1 || delimiter === '"' || delimiter === '\n' || delimiter === '\r') {
    throw new Error('delimiter must be one character other than a quote or a line break');
  }
  const rows = parseCsv(csv, delimiter).filter((r) => !(r.length === 1 && r[0].trim() === ''));
  if (rows.length === 0) return { rows: 0, columns: [] };
  const width = Math.max(...rows.map((r) => r.length));
  const names = header ? rows[0].map((h, i) => h.trim() || `column${i + 1}`) : [];
  for (let i = names.length; i < width; i++) names.push(`column${i + 1}`);
  const body = header ? rows.slice(1) : rows;
  const raggedRows = body.filter((r) => r.length !== (header ? rows[0].length : width)).length;
  const columns = names.map((name, c) => {
    const values = [];
    let missing = 0;
    for (const r of body) {
      const v = (r[c] ?? '').trim();
      if (v === '') missing++;
      else values.push(v);
    }
    if (values.length > 0 && values.every((v) => NUMBER_RE.test(v))) {
      const nums = values.map(Number).sort((a, b) => a - b);
      const sum = nums.reduce((a, b) => a + b, 0);
      const mean = sum / nums.length;
      const variance = nums.reduce((a, b) => a + (b - mean) ** 2, 0) / nums.length;
      return { name, type: 'numeric', count: nums.length, missing, mean: round(mean), min: nums[0], max: nums[nums.length - 1], median: round(median(nums)), stddev: round(Math.sqrt(variance)), sum: round(sum) };
    }
    const counts = new Map();
    for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
    const topValues = [...counts.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, top)
      .map(([value, count]) => ({ value, count }));
    return { name, type: 'text', count: values.length, missing, distinct: counts.size, top: topValues };
  });
  return raggedRows ? { rows: body.length, raggedRows, columns } : { rows: body.length, columns };
}

export default async function (args) {
  return csvStats(args);
}
