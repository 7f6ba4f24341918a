/**
 * Randomised tests reproduce: under CI (CI=true) every fast-check property
 * runs from one fixed seed, so a CI verdict is repeatable and a red run is
 * never a coin toss; locally each run draws a fresh seed and explores. Either
 * way a failure prints its seed and path. FC_SEED=<n> forces a seed, and
 * FC_SEED=random explores under CI too.
 */
import fc from 'fast-check';

const forced = process.env.FC_SEED;
if (forced !== undefined && forced !== 'random') fc.configureGlobal({ seed: Number(forced) });
else if (forced === undefined && process.env.CI === 'true') fc.configureGlobal({ seed: 20261130 });
