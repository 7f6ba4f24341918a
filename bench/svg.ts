/**
 * A hand-written SVG line plot (no dependencies): decision time against pool
 * size, log–log, one line per series, one panel per chart. Pure: returns text.
 */
export interface Series {
  name: string;
  points: { x: number; y: number }[];
  dashed?: boolean;
}

export interface Panel {
  title: string;
  series: Series[];
}

const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#7f7f7f', '#9467bd', '#ff7f0e'];
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function plot(panels: Panel[], caption: string): string {
  const W = 460;
  const H = 340;
  const pad = { l: 60, r: 16, t: 30, b: 90 };
  const all = panels.flatMap((p) => p.series.flatMap((s) => s.points)).filter((p) => p.y > 0);
  const lx = (x: number): number => Math.log10(x);
  const x0 = Math.floor(Math.min(...all.map((p) => lx(p.x))));
  const x1 = Math.ceil(Math.max(...all.map((p) => lx(p.x))));
  const y0 = Math.floor(Math.min(...all.map((p) => lx(p.y))));
  const y1 = Math.ceil(Math.max(...all.map((p) => lx(p.y))));
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W * panels.length}" height="${H + 24}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="100%" height="100%" fill="white"/>`);
  panels.forEach((panel, k) => {
    const ox = k * W;
    const px = (x: number): number => ox + pad.l + ((lx(x) - x0) / Math.max(1, x1 - x0)) * (W - pad.l - pad.r);
    const py = (y: number): number => pad.t + (1 - (lx(y) - y0) / Math.max(1, y1 - y0)) * (H - pad.t - pad.b);
    out.push(`<text x="${ox + W / 2}" y="18" text-anchor="middle" font-size="13">${esc(panel.title)}</text>`);
    for (let e = x0; e <= x1; e++) {
      const x = px(10 ** e);
      out.push(`<line x1="${x}" y1="${pad.t}" x2="${x}" y2="${H - pad.b}" stroke="#ddd"/>`);
      out.push(`<text x="${x}" y="${H - pad.b + 14}" text-anchor="middle">${(10 ** e).toLocaleString('en')}</text>`);
    }
    for (let e = y0; e <= y1; e++) {
      const y = py(10 ** e);
      out.push(`<line x1="${ox + pad.l}" y1="${y}" x2="${ox + W - pad.r}" y2="${y}" stroke="#ddd"/>`);
      out.push(`<text x="${ox + pad.l - 6}" y="${y + 4}" text-anchor="end">${10 ** e < 1 ? (10 ** e).toFixed(-e) : (10 ** e).toLocaleString('en')} ms</text>`);
    }
    out.push(`<text x="${ox + W / 2}" y="${H - pad.b + 30}" text-anchor="middle">splits in the pool</text>`);
    panel.series.forEach((s, i) => {
      const pts = s.points.filter((p) => p.y > 0).sort((a, b) => a.x - b.x);
      const colour = COLOURS[i % COLOURS.length]!;
      if (pts.length > 0) {
        const d = pts.map((p, j) => `${j === 0 ? 'M' : 'L'}${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ');
        out.push(`<path d="${d}" fill="none" stroke="${colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5,4"' : ''}/>`);
        for (const p of pts) out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3" fill="${colour}"/>`);
      }
      const ly = H - pad.b + 46 + 14 * Math.floor(i / 2);
      const lxp = ox + pad.l + (i % 2) * 190;
      out.push(`<line x1="${lxp}" y1="${ly - 4}" x2="${lxp + 22}" y2="${ly - 4}" stroke="${colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5,4"' : ''}/>`);
      out.push(`<text x="${lxp + 28}" y="${ly}">${esc(s.name)}</text>`);
    });
  });
  out.push(`<text x="8" y="${H + 16}" fill="#555">${esc(caption)}</text>`);
  out.push('</svg>');
  return out.join('\n');
}
