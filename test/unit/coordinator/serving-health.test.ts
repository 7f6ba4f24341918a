/**
 * A serving process's health (serving-health.ts, decision 0068): zero jobs is
 * running (ready), a joining or ending job degrades nothing, a degraded job
 * or a job left after an error or a stopped watch degrades the process, and
 * close() moves it to stopping then stopped, whatever its jobs say.
 */
import { describe, expect, it } from 'vitest';
import { assessServing, type ServingObservations } from '../../../src/coordinator/serving-health.js';

const base: ServingObservations = { closed: false, closing: false, kinds: ['export', 'reindex'], jobs: [], failed: [] };
const running = (reason = 'session established; reconciling') => ({ state: 'running' as const, reason });

describe('assessServing', () => {
  it('serving no job is running: idle, naming the kinds it waits for', () => {
    expect(assessServing(base)).toEqual({ state: 'running', reason: 'serving no job: idle, waiting for jobs of kind export, reindex' });
  });

  it('jobs joining or ending are named, and degrade nothing', () => {
    const r = assessServing({ ...base, jobs: [
      { job: 'b', health: running() }, { job: 'a', health: running() },
      { job: 'c', health: undefined }, { job: 'd', health: { state: 'starting', reason: 'opening the session' } },
      { job: 'e', health: { state: 'stopped', reason: 'complete' } },
    ] });
    expect(r).toEqual({ state: 'running', reason: 'serving 2 jobs (a, b); joining c, d; ending e' });
    expect(assessServing({ ...base, jobs: [{ job: 'x', health: undefined }] })).toEqual({ state: 'running', reason: 'serving no job yet; joining x' });
  });

  it("a degraded job degrades the process, with the first one's reason by name and a count of the rest", () => {
    const bad = (reason: string) => ({ state: 'degraded' as const, reason });
    const r = assessServing({ ...base, jobs: [{ job: 'z', health: bad('session lost') }, { job: 'a', health: running() }, { job: 'm', health: bad('no leader') }] });
    expect(r).toEqual({ state: 'degraded', reason: 'job m: no leader (and 1 more job degraded)' });
  });

  it('a job left after an error degrades the process, until it is no longer listed', () => {
    const r = assessServing({ ...base, jobs: [{ job: 'a', health: running() }], failed: [{ job: 'q', reason: 'the planner threw: no' }, { job: 'p', reason: 'x' }] });
    expect(r.state).toBe('degraded');
    expect(r.reason).toBe('left job p after an error, not rejoined until the process restarts or the job is deleted: x (and 1 more job)');
  });

  it("the definitions' watch stopped: degraded, whatever the jobs say", () => {
    expect(assessServing({ ...base, watchError: 'compacted', jobs: [{ job: 'a', health: running() }] })).toEqual({
      state: 'degraded', reason: "the job definitions' watch stopped (compacted): no new job is seen until the process restarts",
    });
  });

  it('closing is stopping and closed is stopped, over any other observation', () => {
    const troubled: ServingObservations = { ...base, watchError: 'x', failed: [{ job: 'q', reason: 'y' }], jobs: [{ job: 'a', health: { state: 'degraded', reason: 'z' } }] };
    expect(assessServing({ ...troubled, closing: true })).toEqual({ state: 'stopping', reason: 'closing: draining 1 job' });
    expect(assessServing({ ...troubled, closing: true, closed: true })).toEqual({ state: 'stopped', reason: 'stopped serving (close())' });
  });

  it('a reason names at most five jobs', () => {
    const jobs = Array.from({ length: 8 }, (_, i) => ({ job: `j${i}`, health: running() }));
    expect(assessServing({ ...base, jobs }).reason).toBe('serving 8 jobs (j0, j1, j2, j3, j4, … 3 more)');
  });
});
