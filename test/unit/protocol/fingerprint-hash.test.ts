/**
 * fingerprintHash is hashed once per fingerprint and kept (the claim and decode paths ask for it
 * per split): what it returns is the seeded content hash every time, first ask or kept, past the
 * number it keeps and back.
 */
import { expect, it } from 'vitest';
import { contentKey } from '../../../src/hash.js';
import { fingerprintHash } from '../../../src/protocol/records.js';

const direct = (fp: string) => {
  const [lo, hi] = contentKey('splitfleet.fingerprint', fp);
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
};

it('is the content hash of the fingerprint, first ask or kept, for more fingerprints than it keeps', () => {
  const fps = Array.from({ length: 200 }, (_, i) => `splitfleet/job-${i}`);
  for (let round = 0; round < 3; round++) for (const fp of fps) expect(fingerprintHash(fp)).toBe(direct(fp));
  expect(new Set(fps.map(fingerprintHash)).size).toBe(200);
  expect(fingerprintHash('splitfleet/job-0')).toMatch(/^[0-9a-f]{16}$/);
});
