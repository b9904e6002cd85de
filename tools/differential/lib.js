// tools/differential/lib.js: what the differential run's node scripts share:
// a seeded random generator, the cache directory's require, and JSON lines.
//
// What it must never do: draw on Math.random or the clock for anything a page
// is made of (a seed and a page index must give the same page every time).
'use strict';
const path = require('path');
const fs = require('fs');
const { createRequire } = require('module');

// mulberry32 over a 32-bit state; one generator per page, seeded from the
// run's seed and the page's index, so a page is made again without the others.
function rng(seed, index) {
  let h = (seed >>> 0) ^ Math.imul((index + 1) >>> 0, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  let a = (h ^ (h >>> 16)) >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),   // lo..hi inclusive
    chance: (p) => next() < p,
    pick: (list) => list[Math.floor(next() * list.length)],
    // weighted: [[weight, value], ...]
    weighted: (pairs) => {
      let total = 0;
      for (const [w] of pairs) total += w;
      let x = next() * total;
      for (const [w, v] of pairs) { x -= w; if (x < 0) return v; }
      return pairs[pairs.length - 1][1];
    },
    shuffle: (list) => {
      const out = list.slice();
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j], out[i]];
      }
      return out;
    },
  };
  return r;
}

// require() of the packages `npm ci` put in the cache directory (DIFF_CACHE).
function cacheRequire() {
  const dir = process.env.DIFF_CACHE;
  if (!dir) throw new Error('DIFF_CACHE is not set (run through make differential)');
  return createRequire(path.join(dir, 'package.json'));
}

function readLines(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
}

module.exports = { rng, cacheRequire, readLines };
