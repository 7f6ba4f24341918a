/**
 * Regressions and self-checks of the simulation.
 *
 * - Each schedule below is the shrunk counterexample with which the
 *   simulation found a defect in src/coordinator (see docs/simulation.md);
 *   replayed deterministically, it must now keep every property.
 * - Each mutant is a deliberately broken coordinator (a guard stripped from
 *   its transactions by the store facade); the simulation must catch it
 *   within a bounded number of schedules, or the auditor has lost its teeth.
 *   A packed job's mutants must be caught by the packed queue's own property.
 * - `packedFound` holds the shrunk schedules of defects the packed simulation
 *   found, with the fix named: replayed, each must keep every property.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { VirtualClock } from '../../src/clock.js';
import type { Coordinator } from '../../src/coordinator/coordinator.js';
import { MemoryStore } from '../../src/store/memory.js';
import { exactKey } from '../../src/store/store.js';
import { FaultClock, FaultStore, flush } from '../../src/testing/faults.js';
import { DIVIDE_MUTANTS, divideScheduleArb, MUTANTS, PACKED_MUTANTS, packedScheduleArb, runSchedule, scheduleArb, type Schedule } from './schedule.js';

const base: Pick<Schedule, 'seed' | 'commitEvery' | 'drainDeadlineMs' | 'reconcileIntervalMs' | 'lanes' | 'drains' | 'restartAtEnd'> = {
  seed: 0, commitEvery: 1, drainDeadlineMs: 200, reconcileIntervalMs: 300, lanes: [1], drains: ['cooperate'], restartAtEnd: false,
};

const found: Record<string, Schedule> = {
  // auditor.ts (a fresh-seed hostile hunt, seed 642436092; the auditor's, not the fleet's): the writer put a lease
  // key naming a dead instance, then deleted the split's record; the leader seeded it again (epoch 0) under that
  // key. The key is the deleted record's leftover, the writer's rather than the fleet's; the auditor excused only
  // a key the fleet put. It now excuses either.
  'a lease key the hostile writer put before deleting the record is that record\'s leftover': {"seed":589600769,"fleet":2,"splits":14,"maxUnits":3,"commitEvery":2,"unitMs":799,"leaseSeconds":2,"rebalanceDelayMs":0,"drainDeadlineMs":1938,"reconcileIntervalMs":4993,"lanes":[2],"prefetch":[1,1],"drains":["ignore","slow","cooperate","decline"],"steps":[{"gapMs":334,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":1264,"fault":{"kind":"hostile","record":"lease","mutation":"dead-instance","target":41}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":60}},{"gapMs":0,"fault":{"kind":"leave","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":567,"fault":{"kind":"hostile","record":"assign","mutation":"delete","target":63,"repairAfterMs":1004}},{"gapMs":432,"fault":{"kind":"crash","target":45}}],"restartAtEnd":true},
  // auditor.ts and replay.ts (a fresh-seed run of the random fleet schedules, seed 200224943; the auditor's, not
  // the fleet's): a one-unit split quarantined after its tenancies died uncommitted, then retried by the operator
  // after the stall, ran once more than the takeovers allowed. A quarantine ends a tenancy without a takeover, so
  // an operator's retry now counts as a cause of replay, like a foreign write.
  'an operator\'s retry of a quarantined split may replay what its last tenancy left uncommitted': {"seed":0,"fleet":2,"splits":5,"maxUnits":1,"commitEvery":1,"unitMs":654,"leaseSeconds":3,"rebalanceDelayMs":539,"drainDeadlineMs":200,"reconcileIntervalMs":300,"lanes":[1],"prefetch":[0],"drains":["slow"],"steps":[{"gapMs":115,"fault":{"kind":"expire","target":9}},{"gapMs":631,"fault":{"kind":"pause","target":33,"tenths":10}},{"gapMs":813,"fault":{"kind":"leaderKill"}},{"gapMs":669,"fault":{"kind":"pause","target":61,"tenths":2}},{"gapMs":58,"fault":{"kind":"skew","target":21,"latencyMs":923,"durationMs":4367}},{"gapMs":1164,"fault":{"kind":"pause","target":4,"tenths":24}},{"gapMs":916,"fault":{"kind":"expire","target":19}},{"gapMs":686,"fault":{"kind":"pause","target":11,"tenths":11}},{"gapMs":1365,"fault":{"kind":"restart","target":42}},{"gapMs":1065,"fault":{"kind":"join"}}],"restartAtEnd":true},
  // claims.ts (defect 39; a fresh-seed hostile hunt, seed 350055039, its 14th schedule): w1 crashed holding s-5,
  // whose record the hostile writer then deleted; the leader seeded it again (epoch 0) while w1's lease key
  // (epoch 1) still lived. w1, restarted under the same instance id, took that key for its own earlier run's and
  // reclaimed over it: a second tenancy of epoch 1 while the first's key was live, and an attempt charged for a
  // delivery that never failed. Our own key naming an epoch above the record's now waits out its lease.
  'a restarted owner does not reclaim over its old lease key once the record was created again': {"seed":556544590,"fleet":3,"splits":9,"maxUnits":3,"commitEvery":2,"unitMs":168,"leaseSeconds":2,"rebalanceDelayMs":0,"drainDeadlineMs":1240,"reconcileIntervalMs":1529,"lanes":[1],"prefetch":[3,2],"drains":["cooperate","slow"],"steps":[{"gapMs":0,"fault":{"kind":"crash","target":43}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":5}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":404,"fault":{"kind":"hostile","record":"progress","mutation":"leaseless","target":55,"repairAfterMs":2}}],"restartAtEnd":true},
  // orphans.ts, settle-orphans.ts (decision 0071; the hostile writer's deletion of a split's own records, issue
  // 49): split.s-01 deleted while w0 held it; the leader seeded it again (epoch 0), w0's lane was fenced and its
  // lease key, live on w0's session, was followed as an orphan whose record "did not name it yet": it waited for
  // good, the key blocked every claim, and the job never finished. The key is now dropped.
  // leader.ts (a fresh-seed hostile hunt, issue 49): split.s-1 deleted just after the verdict; w0, paused
  // meanwhile, resumed, was elected in the finished job and, before it stopped, seeded the record again: a
  // runnable split nobody would run, in a job whose verdict says complete. A finished job is not seeded again.
  'a split record deleted after the verdict is not seeded again': {"seed":16,"fleet":6,"splits":6,"maxUnits":5,"commitEvery":2,"unitMs":800,"leaseSeconds":1,"rebalanceDelayMs":3726,"drainDeadlineMs":457,"reconcileIntervalMs":2108,"lanes":[2,4,1],"prefetch":[1,0],"drains":["decline","decline"],"steps":[{"gapMs":1488,"fault":{"kind":"join"}},{"gapMs":808,"fault":{"kind":"leaderPause","tenths":10}},{"gapMs":7,"fault":{"kind":"leaderPause","tenths":5}},{"gapMs":9,"fault":{"kind":"hostile","record":"assign","mutation":"garbage","target":0}},{"gapMs":888,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":19}},{"gapMs":0,"fault":{"kind":"join"}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}}],"restartAtEnd":true} as Schedule,
  // seeding.ts, leader-txns.ts `reseedTxn` (defect 40; a fresh-seed hostile hunt of keys jobs, seed -1390961294):
  // split.s-0 deleted in the revision after the leader's own verdict; its view had not applied the verdict yet,
  // so it seeded the record again: a runnable split in a job whose verdict says complete. The re-seeding now
  // compares the plan record at the revision the view read, so a verdict written since makes it lose.
  'a split record deleted just after the leader\'s own verdict is not seeded again': {"seed":13,"fleet":3,"splits":9,"maxUnits":6,"commitEvery":3,"unitMs":672,"leaseSeconds":1,"rebalanceDelayMs":5000,"drainDeadlineMs":204,"reconcileIntervalMs":4910,"lanes":[3,2,3],"prefetch":[0,3,0],"drains":["ignore"],"steps":[{"gapMs":647,"fault":{"kind":"skew","target":0,"latencyMs":4,"durationMs":2043}},{"gapMs":1131,"fault":{"kind":"hostile","record":"split","mutation":"dead-instance","target":0}},{"gapMs":911,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":0}},{"gapMs":1388,"fault":{"kind":"hostile","record":"assign","mutation":"deep","target":16,"repairAfterMs":5496}},{"gapMs":1268,"fault":{"kind":"expire","target":59}},{"gapMs":1485,"fault":{"kind":"pause","target":56,"tenths":2}}],"restartAtEnd":true} as Schedule,
  // hostile.ts (a fresh-seed hostile hunt of keys jobs, seed 728818437; the writer's, not the fleet's): split.s-15
  // and spec.s-15 deleted after a stalled verdict; the writer left both out, taking a split with neither record
  // for one a fold-back took, which only a packed job does. The fleet waited for them as it should ("1 planned
  // split in no queue page or record … no verdict until put back"), for good. A keys job's records are put back.
  'a keys job\'s split and spec both deleted are put back by the writer, and the job completes': {"seed":1663862599,"fleet":5,"splits":37,"maxUnits":1,"commitEvery":2,"unitMs":257,"leaseSeconds":2,"rebalanceDelayMs":2053,"drainDeadlineMs":1748,"reconcileIntervalMs":4560,"lanes":[1],"prefetch":[1,3],"drains":["cooperate","ignore","decline","ignore"],"steps":[{"gapMs":771,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":394,"fault":{"kind":"restart","target":0}},{"gapMs":727,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":164,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":15}},{"gapMs":0,"fault":{"kind":"hostile","record":"spec","mutation":"delete","target":15}},{"gapMs":0,"fault":{"kind":"join"}},{"gapMs":67,"fault":{"kind":"delay","target":45,"latencyMs":1332,"durationMs":4113}},{"gapMs":1152,"fault":{"kind":"hostile","record":"progress","mutation":"garbage","target":39,"repairAfterMs":1387}},{"gapMs":967,"fault":{"kind":"hostile","record":"summary","mutation":"wrong-type","target":38}}],"restartAtEnd":false} as Schedule,
  // packed-invariants.ts (a fresh-seed packed hostile hunt, seed 445408838; the auditor's, not the fleet's): queue.0.0
  // deleted; a new leader seeded its splits again into queue.0.1; folded.0.0 deleted and put back. The put-back
  // marked s-01 and s-02 folded again with no rerun left, though their page is now queue.0.1, where their bits
  // are not set and the leader rightly promoted them again. A bit put back counts only on the split's own page.
  'a folded record put back on a page whose splits were seeded into another page does not undo their rerun': {"seed":338717866,"fleet":3,"splits":15,"maxUnits":1,"commitEvery":2,"unitMs":295,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":852,"reconcileIntervalMs":2283,"lanes":[2,2,3,2],"prefetch":[3,1,2],"drains":["cooperate","cooperate"],"steps":[{"gapMs":695,"fault":{"kind":"hostile","record":"queue","mutation":"delete","target":0}},{"gapMs":718,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":172,"fault":{"kind":"leaderPause","tenths":8}},{"gapMs":222,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":525,"fault":{"kind":"hostile","record":"folded","mutation":"delete","target":0}}],"restartAtEnd":false,"layout":"packed","waves":4,"waveMs":203,"replanIntervalMs":2587,"buckets":1} as Schedule,
  // replay.ts (a fresh-seed keys hostile hunt, seed 75673680; the auditor's, not the fleet's): progress.s-8 deleted
  // while its owner was dead; w1 took the split over (epoch 2, nothing to resume), and the writer put the old
  // progress record back a revision later. w1's commit was refused, its lane lost, the split adopted again: the
  // tenancy processed 3 units past its last commit, over the per-tenancy bound of 2, which now spares a split a
  // foreign write hit (its duplicates stay bounded per split).
  'a progress record put back under a new tenancy refuses its commits: a replay the writer caused': {"seed":2147483644,"fleet":3,"splits":10,"maxUnits":8,"commitEvery":2,"unitMs":222,"leaseSeconds":3,"rebalanceDelayMs":0,"drainDeadlineMs":520,"reconcileIntervalMs":2843,"lanes":[3,3,2,5],"prefetch":[3,1],"drains":["decline","cooperate","ignore"],"steps":[{"gapMs":792,"fault":{"kind":"leaderKill"}},{"gapMs":1156,"fault":{"kind":"hostile","record":"progress","mutation":"delete","target":25}},{"gapMs":679,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":40,"fault":{"kind":"crash","target":31}},{"gapMs":1370,"fault":{"kind":"hostile","record":"worker","mutation":"leaseless","target":0,"repairAfterMs":963}},{"gapMs":804,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":18,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":740,"fault":{"kind":"leaderPause","tenths":9}},{"gapMs":986,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":693,"fault":{"kind":"join"}},{"gapMs":722,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}}],"restartAtEnd":false} as Schedule,
  // lives.ts `tenancyAt` (a fresh-seed packed hostile hunt, seed 793544629; the auditor's, not the fleet's): w1
  // completed s-12 (units 1-3, the last at t=2154); the writer deleted its record; the leader promoted it again and
  // w1 claimed it again, epoch 1 once more, in the same virtual millisecond. The auditor gave unit 3 to the new
  // life (claimed at or before t) and reported the first life's completion as a commit of a unit never processed.
  // A unit now goes to the last life that could process it: one whose resume point it is past.
  'a unit processed in the millisecond its split is claimed again goes to the life that processed it': {"seed":1684378468,"fleet":5,"splits":16,"maxUnits":4,"commitEvery":2,"unitMs":52,"leaseSeconds":2,"rebalanceDelayMs":3373,"drainDeadlineMs":2004,"reconcileIntervalMs":3505,"lanes":[1,5],"prefetch":[2],"drains":["ignore"],"steps":[{"gapMs":766,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":1335,"fault":{"kind":"hostile","record":"split","mutation":"leaseless","target":0}},{"gapMs":53,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":47}},{"gapMs":0,"fault":{"kind":"operator","action":"pause","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"slow","target":0,"latencyMs":1,"durationMs":100}}],"restartAtEnd":true,"layout":"packed","waves":2,"waveMs":616,"replanIntervalMs":1760,"buckets":8} as Schedule,
  'a lease key whose split record was deleted and seeded again is dropped': {"seed": 20261203, "fleet": 3, "splits": 12, "maxUnits": 6, "commitEvery": 1, "unitMs": 300, "leaseSeconds": 2, "rebalanceDelayMs": 0, "drainDeadlineMs": 1000, "reconcileIntervalMs": 1000, "lanes": [2, 3], "drains": ["cooperate"], "steps": [{"gapMs": 1500, "fault": {"kind": "hostile", "record": "split", "mutation": "delete", "target": 1, "repairAfterMs": 3000}}, {"gapMs": 4000, "fault": {"kind": "join"}}], "restartAtEnd": false} as Schedule,
  // auditor.ts (the hostile writer's leaseless presence key, a fresh-seed hunt, issue 49): a crashed
  // process's presence key written again with no etcd lease outlives its lease, and only the writer's
  // repair deletes it; the auditor's final state left that repair out and reported the key as outliving
  // the fleet. Its final state now replays the writer's presence and lease keys, as its audit does.
  'a leaseless presence key of a crashed process, repaired by deletion': {"seed":1710674211,"fleet":2,"splits":9,"maxUnits":6,"commitEvery":2,"unitMs":464,"leaseSeconds":2,"rebalanceDelayMs":0,"drainDeadlineMs":3887,"reconcileIntervalMs":3074,"lanes":[2,5],"prefetch":[0,0],"drains":["decline","ignore","decline"],"steps":[{"gapMs":0,"fault":{"kind":"crash","target":21}},{"gapMs":0,"fault":{"kind":"hostile","record":"worker","mutation":"leaseless","target":45}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"operator","action":"pause","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}}],"restartAtEnd":false} as Schedule,
  'the same, on a packed job': {"seed":1956154609,"fleet":4,"splits":9,"maxUnits":3,"commitEvery":2,"unitMs":179,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":208,"reconcileIntervalMs":311,"lanes":[5],"prefetch":[2,0,1],"drains":["ignore","slow","cooperate","decline"],"steps":[{"gapMs":1446,"fault":{"kind":"skew","target":0,"latencyMs":1,"durationMs":100}},{"gapMs":827,"fault":{"kind":"crash","target":1}},{"gapMs":1055,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":4,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":974,"fault":{"kind":"crash","target":25}},{"gapMs":972,"fault":{"kind":"crash","target":45}},{"gapMs":698,"fault":{"kind":"hostile","record":"worker","mutation":"leaseless","target":11,"repairAfterMs":9547}},{"gapMs":1067,"fault":{"kind":"hostile","record":"folded","mutation":"control-chars","target":15,"repairAfterMs":5202}},{"gapMs":609,"fault":{"kind":"hostile","record":"spec","mutation":"control-chars","target":32}},{"gapMs":138,"fault":{"kind":"hostile","record":"publish","mutation":"deep","target":46,"repairAfterMs":12784}},{"gapMs":637,"fault":{"kind":"operator","action":"resume","target":28}},{"gapMs":838,"fault":{"kind":"delay","target":57,"latencyMs":147,"durationMs":6309}}],"restartAtEnd":true,"layout":"packed","waves":4,"waveMs":2680,"replanIntervalMs":2147,"buckets":2} as Schedule,
  // claiming.ts (prefetch, issue 47; the hostile simulation): a claim that found its progress record
  // unreadable (a duplicate-key write) gave the split back, and with another named split taking the
  // lane the orphan settler released it, and it was claimed again at once: claim → release, 20,000
  // store calls at one instant. Such a split is now left alone for reconcileIntervalMs.
  'a split whose progress cannot be read is not claimed again at once': {"seed":449898720,"fleet":6,"splits":47,"maxUnits":7,"commitEvery":1,"unitMs":402,"leaseSeconds":3,"rebalanceDelayMs":0,"drainDeadlineMs":201,"reconcileIntervalMs":4389,"lanes":[3,1],"prefetch":[2,3],"drains":["decline","slow","cooperate","ignore"],"steps":[{"gapMs":428,"fault":{"kind":"hostile","record":"progress","mutation":"deep","target":10,"repairAfterMs":16129}},{"gapMs":321,"fault":{"kind":"hostile","record":"control","mutation":"dead-instance","target":51,"repairAfterMs":14137}},{"gapMs":680,"fault":{"kind":"leave","target":15}},{"gapMs":798,"fault":{"kind":"leaderPause","tenths":22}},{"gapMs":269,"fault":{"kind":"hostile","record":"publish","mutation":"garbage","target":14,"repairAfterMs":4323}},{"gapMs":70,"fault":{"kind":"hostile","record":"progress","mutation":"wrong-type","target":14}},{"gapMs":1113,"fault":{"kind":"hostile","record":"summary","mutation":"garbage","target":7,"repairAfterMs":4249}},{"gapMs":1496,"fault":{"kind":"crash","target":9}},{"gapMs":1149,"fault":{"kind":"hostile","record":"progress","mutation":"duplicate-key","target":9,"repairAfterMs":18445}},{"gapMs":857,"fault":{"kind":"hostile","record":"plan","mutation":"dead-instance","target":48,"repairAfterMs":2319}},{"gapMs":677,"fault":{"kind":"hostile","record":"progress","mutation":"newer-minor","target":52,"repairAfterMs":8389}},{"gapMs":1179,"fault":{"kind":"hostile","record":"assign","mutation":"dead-instance","target":38,"repairAfterMs":8786}},{"gapMs":90,"fault":{"kind":"leaderKill"}},{"gapMs":125,"fault":{"kind":"hostile","record":"plan","mutation":"wrong-type","target":22,"repairAfterMs":6937}}],"restartAtEnd":true} as Schedule,
  // claiming.ts (prefetch, issue 47): the decisions of a claim batch spent no lane while its takeovers'
  // progress was read, so a reconciliation meanwhile claimed a third named split on two lanes
  // (the lane-budget property, fresh seeds after defect 27's fix).
  'a claim batch spends its lanes while its costs are read': {"seed":0,"fleet":3,"splits":13,"maxUnits":5,"commitEvery":1,"unitMs":409,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":200,"reconcileIntervalMs":300,"lanes":[2],"prefetch":[1],"drains":["cooperate"],"steps":[{"gapMs":120,"fault":{"kind":"pause","target":26,"tenths":3}},{"gapMs":879,"fault":{"kind":"slow","target":0,"latencyMs":24,"durationMs":2105}},{"gapMs":329,"fault":{"kind":"pause","target":25,"tenths":23}},{"gapMs":725,"fault":{"kind":"leaderPause","tenths":10}},{"gapMs":915,"fault":{"kind":"join"}},{"gapMs":89,"fault":{"kind":"crash","target":58}},{"gapMs":469,"fault":{"kind":"expire","target":45}},{"gapMs":94,"fault":{"kind":"crash","target":16}},{"gapMs":515,"fault":{"kind":"delay","target":34,"latencyMs":2796,"durationMs":3371}}],"restartAtEnd":true} as Schedule,
  // worker.ts (prefetch, issue 47): a takeover whose progress was being read (Claimer.costing) did not
  // count as a lane in use, so a reconciliation meanwhile claimed a second named split: w0 held 2 with
  // maxInFlight 1 (found by the auditor's lane-budget property once members were named beyond their lanes).
  'a takeover being costed spends its lane': {"seed":0,"fleet":4,"splits":13,"maxUnits":4,"commitEvery":1,"unitMs":254,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":200,"reconcileIntervalMs":300,"lanes":[1],"prefetch":[1],"drains":["cooperate"],"steps":[{"gapMs":0,"fault":{"kind":"slow","target":0,"latencyMs":63,"durationMs":763}},{"gapMs":666,"fault":{"kind":"crash","target":13}},{"gapMs":96,"fault":{"kind":"pause","target":44,"tenths":12}},{"gapMs":0,"fault":{"kind":"expire","target":24}},{"gapMs":0,"fault":{"kind":"slow","target":0,"latencyMs":4,"durationMs":1175}},{"gapMs":1172,"fault":{"kind":"join"}},{"gapMs":2,"fault":{"kind":"crash","target":21}}],"restartAtEnd":false} as Schedule,
  // claiming.ts: a batch's 'create' decision waited for the progress reads of the batch's takeovers;
  // meanwhile the split's own earlier claim landed and its lease expired, and the create was sent
  // against the record as it now was: a takeover of a tenancy that committed nothing, charged nothing.
  'a decision is not sent on an observation that moved while progress was read': {seed: 1034888924, fleet: 2, splits: 20, maxUnits: 3, commitEvery: 1, unitMs: 372, leaseSeconds: 1, rebalanceDelayMs: 0, drainDeadlineMs: 200, reconcileIntervalMs: 300, lanes: [3], drains: ['cooperate'], steps: [{gapMs: 766, fault: {kind: 'delay', target: 9, latencyMs: 301, durationMs: 1635}}, {gapMs: 400, fault: {kind: 'pause', target: 0, tenths: 1}}, {gapMs: 1234, fault: {kind: 'expire', target: 21}}], restartAtEnd: false} as Schedule,
  // leader.ts: a campaign that won the key but lost the plan generation bump (the plan moved between
  // its read and the bump: here a record put back by hand; an operator's retry does the same) resigned,
  // and the deletion of its key arrived while that campaign still ran: nobody campaigned again.
  'a candidate that loses the generation bump campaigns again': {seed: 47224147, fleet: 2, splits: 57, maxUnits: 7, commitEvery: 1, unitMs: 797, leaseSeconds: 2, rebalanceDelayMs: 0, drainDeadlineMs: 2605, reconcileIntervalMs: 307, lanes: [2, 5, 4], drains: ['cooperate', 'cooperate', 'cooperate'], steps: [{gapMs: 835, fault: {kind: 'operator', action: 'resumeInstance', target: 23}}, {gapMs: 925, fault: {kind: 'hostile', record: 'worker', mutation: 'deep', target: 28, repairAfterMs: 9391}}, {gapMs: 733, fault: {kind: 'join'}}, {gapMs: 1198, fault: {kind: 'hostile', record: 'plan', mutation: 'newer-minor', target: 12, repairAfterMs: 11528}}, {gapMs: 428, fault: {kind: 'restart', target: 34}}, {gapMs: 455, fault: {kind: 'hostile', record: 'progress', mutation: 'wrong-type', target: 51, repairAfterMs: 10900}}, {gapMs: 91, fault: {kind: 'hostile', record: 'control', mutation: 'deep', target: 57, repairAfterMs: 9016}}, {gapMs: 669, fault: {kind: 'hostile', record: 'spec', mutation: 'control-chars', target: 37}}, {gapMs: 176, fault: {kind: 'crash', target: 50}}, {gapMs: 592, fault: {kind: 'hostile', record: 'assign', mutation: 'control-chars', target: 26, repairAfterMs: 12891}}, {gapMs: 783, fault: {kind: 'hostile', record: 'plan', mutation: 'wrong-type', target: 61, repairAfterMs: 19266}}, {gapMs: 53, fault: {kind: 'hostile', record: 'plan', mutation: 'huge', target: 63, repairAfterMs: 6250}}, {gapMs: 1223, fault: {kind: 'hostile', record: 'publish', mutation: 'huge', target: 61, repairAfterMs: 19011}}, {gapMs: 560, fault: {kind: 'leaderKill'}}, {gapMs: 1459, fault: {kind: 'slow', target: 10, latencyMs: 137, durationMs: 572}}, {gapMs: 611, fault: {kind: 'hostile', record: 'worker', mutation: 'deep', target: 0, repairAfterMs: 12840}}], restartAtEnd: false} as Schedule,
  // settle-orphans.ts: an adopted lane fenced by a foreign write to progress.{id} (which no worker
  // watches) was adopted again only once the view moved; in a quiet fleet it never did, and the split
  // stayed held by a live member with no lane, forever (found by the hostile-writer simulation).
  'an adopted lane fenced by a foreign progress write is adopted again': {seed: 1274521838, fleet: 6, splits: 27, maxUnits: 5, commitEvery: 2, unitMs: 241, leaseSeconds: 2, rebalanceDelayMs: 948, drainDeadlineMs: 3999, reconcileIntervalMs: 2843, lanes: [1], drains: ['cooperate', 'cooperate', 'cooperate'], steps: [{gapMs: 646, fault: {kind:  'leaderKill'}}, {gapMs: 1187, fault: {kind:  'hostile', record: 'plan', mutation: 'dead-instance', target: 14, repairAfterMs: 18749}}, {gapMs: 733, fault: {kind:  'leave', target: 57}}, {gapMs: 250, fault: {kind:  'hostile', record: 'progress', mutation: 'newer-minor', target: 51, repairAfterMs: 270}}, {gapMs: 628, fault: {kind:  'hostile', record: 'assign', mutation: 'control-chars', target: 15, repairAfterMs: 1344}}, {gapMs: 673, fault: {kind:  'hostile', record: 'progress', mutation: 'duplicate-key', target: 23}}, {gapMs: 330, fault: {kind:  'slow', target: 59, latencyMs: 346, durationMs: 5492}}], restartAtEnd: true} as Schedule,
  // leader-records.ts (packed, ac0771c): a leader's listing sorts folded.* before plan, and the folded
  // records it read before the plan said 'packed' were dropped: the leader elected after this leader
  // kill took every folded split for a queued one, each promotion naming one lost (its page's folded
  // record was not at revision 0), nothing was published again and the job never finished.
  'a new leader keeps the folded bits it listed before the plan record': {seed: 741205982, fleet: 2, splits: 59, maxUnits: 1, commitEvery: 1, unitMs: 55, leaseSeconds: 2, rebalanceDelayMs: 62, drainDeadlineMs: 203, reconcileIntervalMs: 1638, lanes: [3, 3, 4], drains: ['decline', 'ignore', 'slow', 'decline'], steps: [{gapMs: 122, fault: {kind: 'leaderKill'}}], restartAtEnd: true, layout: 'packed', waves: 1, waveMs: 205, replanIntervalMs: 1966},
  // worker.ts: a lost claim re-ran reconciliation at once on the same stale view and
  // claimed again, forever (a hot loop of doomed transactions while the watch lagged).
  'a lost claim is not retried on the same stale observation': {
    ...base, fleet: 2, splits: 5, maxUnits: 1, unitMs: 50, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [{ gapMs: 100, fault: { kind: 'pause', target: 0, tenths: 1 } }, { gapMs: 100, fault: { kind: 'leaderKill' } }],
  },
  // leader.ts: a leader whose view had not yet seen its own leader key deposed itself on
  // the next batch of events, leaving the key live under its lease and nobody leading.
  'a new leader is not deposed by its own lagging view': {
    ...base, seed: 1247620034, fleet: 3, splits: 5, maxUnits: 4, unitMs: 422, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [
      { gapMs: 443, fault: { kind: 'crash', target: 0 } },
      { gapMs: 1555, fault: { kind: 'crash', target: 0 } },
      { gapMs: 0, fault: { kind: 'delay', target: 0, latencyMs: 7, durationMs: 1008 } },
      { gapMs: 671, fault: { kind: 'pause', target: 0, tenths: 1 } },
      { gapMs: 336, fault: { kind: 'leaderPause', tenths: 5 } },
    ],
  },
  // coordinator.ts: stop() (the job finished) while a session was still opening left that
  // session's lease renewed, and its presence and leader keys live, after `done`.
  'a session that opens after stop() is closed': {
    ...base, fleet: 2, splits: 5, maxUnits: 1, unitMs: 50, leaseSeconds: 2, rebalanceDelayMs: 0, restartAtEnd: true,
    steps: [{ gapMs: 0, fault: { kind: 'crash', target: 0 } }, { gapMs: 0, fault: { kind: 'join' } }],
  },
  // publish.ts: a departed member's record, kept while some of its splits were withheld,
  // still named a split now assigned to a live member: one split in two records.
  "a departed member's kept record names only its withheld splits": {
    ...base, seed: 1, fleet: 2, splits: 5, maxUnits: 5, unitMs: 329, leaseSeconds: 1, rebalanceDelayMs: 50, drainDeadlineMs: 788,
    lanes: [2], drains: ['ignore'],
    steps: [
      { gapMs: 682, fault: { kind: 'pause', target: 7, tenths: 5 } },
      { gapMs: 630, fault: { kind: 'leave', target: 3 } },
      { gapMs: 0, fault: { kind: 'leaderKill' } },
    ],
  },
  'the same, at fleet scale': {
    ...base, seed: 532624174, fleet: 6, splits: 38, maxUnits: 7, unitMs: 463, leaseSeconds: 1, rebalanceDelayMs: 82, lanes: [4], drains: ['slow'],
    steps: [
      { gapMs: 333, fault: { kind: 'leaderKill' } },
      { gapMs: 720, fault: { kind: 'join' } },
      { gapMs: 945, fault: { kind: 'crash', target: 43 } },
    ],
  },
  // coordinator.ts: a session lost during a graceful stop() whose rejoin then failed (timed
  // out on a slow store, or waited out its old presence key too long) turned the stop into a
  // fatal error: `done` rejected.
  'a failed rejoin while stopping is not fatal': {
    ...base, fleet: 3, splits: 5, maxUnits: 4, unitMs: 410, leaseSeconds: 1, rebalanceDelayMs: 50, restartAtEnd: true,
    steps: [
      { gapMs: 0, fault: { kind: 'slow', target: 1, latencyMs: 150, durationMs: 500 } },
      { gapMs: 0, fault: { kind: 'leave', target: 0 } },
      { gapMs: 0, fault: { kind: 'leave', target: 1 } },
      { gapMs: 0, fault: { kind: 'expire', target: 0 } },
      { gapMs: 487, fault: { kind: 'leave', target: 0 } },
    ],
  },
  // worker.ts: a lane write that timed out but landed left the lane's guard stale; its next
  // write was fenced and the lane ended as lost, but the lease key stayed on our live session
  // lease. Moved to another member meanwhile, the split was stranded: the job never finished.
  "a split held by this session with no lane behind it is given back": {
    ...base, fleet: 3, splits: 15, maxUnits: 7, unitMs: 281, leaseSeconds: 3, rebalanceDelayMs: 50, lanes: [2], restartAtEnd: true,
    steps: [
      { gapMs: 618, fault: { kind: 'restart', target: 36 } },
      { gapMs: 1382, fault: { kind: 'slow', target: 51, latencyMs: 371, durationMs: 3389 } },
      { gapMs: 1630, fault: { kind: 'pause', target: 32, tenths: 29 } },
    ],
  },
  // leader.ts: a campaign that timed out but landed left a leader key on our live session
  // lease with no term on it: nobody else campaigned, we did not lead, nothing was assigned.
  'a leader key of ours that no term stands on is deleted': {
    ...base, fleet: 2, splits: 5, maxUnits: 4, unitMs: 50, leaseSeconds: 1, rebalanceDelayMs: 0, drains: ['slow', 'cooperate'],
    steps: [
      { gapMs: 25, fault: { kind: 'leave', target: 0 } },
      { gapMs: 101, fault: { kind: 'slow', target: 0, latencyMs: 200, durationMs: 100 } },
      { gapMs: 199, fault: { kind: 'join' } },
    ],
  },
  // worker.ts + view.ts: a lost claim waited for its split's record or lease key to move in
  // the view, but a lease key put and deleted again leaves that pair as it was, and a stale
  // watch event applied over the backstop's fresher read had made the claim lose: the split
  // was never claimed again.
  'a lost claim is retried once the view has moved': {
    ...base, fleet: 2, splits: 40, maxUnits: 4, unitMs: 50, leaseSeconds: 2, rebalanceDelayMs: 50, lanes: [4],
    steps: [
      { gapMs: 377, fault: { kind: 'crash', target: 21 } },
      { gapMs: 370, fault: { kind: 'leaderPause', tenths: 15 } },
      { gapMs: 920, fault: { kind: 'restart', target: 0 } },
      { gapMs: 334, fault: { kind: 'crash', target: 7 } },
      { gapMs: 0, fault: { kind: 'restart', target: 0 } },
      { gapMs: 0, fault: { kind: 'join' } },
      { gapMs: 324, fault: { kind: 'expire', target: 0 } },
      { gapMs: 30, fault: { kind: 'delay', target: 25, latencyMs: 901, durationMs: 1647 } },
      { gapMs: 975, fault: { kind: 'leaderPause', tenths: 5 } },
      { gapMs: 36, fault: { kind: 'slow', target: 35, latencyMs: 601, durationMs: 1037 } },
      { gapMs: 272, fault: { kind: 'crash', target: 0 } },
      { gapMs: 764, fault: { kind: 'join' } },
      { gapMs: 0, fault: { kind: 'pause', target: 0, tenths: 1 } },
      { gapMs: 25, fault: { kind: 'crash', target: 4 } },
      { gapMs: 0, fault: { kind: 'slow', target: 0, latencyMs: 1, durationMs: 100 } },
      { gapMs: 0, fault: { kind: 'pause', target: 0, tenths: 1 } },
    ],
  },
  // A crashed member's last renewal, slowed in flight, landed after its restart began and
  // kept the old presence key alive past one lease: the restart was refused as a duplicate.
  'a restart is not a duplicate while the crashed run\'s last renewal is still in flight': {
    seed: 0, fleet: 2, splits: 5, maxUnits: 1, commitEvery: 1, unitMs: 50, leaseSeconds: 1, rebalanceDelayMs: 50,
    drainDeadlineMs: 200, reconcileIntervalMs: 300, lanes: [1], drains: ['cooperate'], restartAtEnd: true,
    steps: [
      { gapMs: 61, fault: { kind: 'slow', target: 0, latencyMs: 668, durationMs: 806 } },
      { gapMs: 805, fault: { kind: 'crash', target: 0 } },
    ],
  },
  // leader-view.ts: the leader's backstop re-listed an assignment record before the watch
  // delivered the leader's own write of it; the event then changed nothing, so nothing woke
  // the leader, which waited forever to see its write before deciding again.
  'a write the backstop saw first still wakes the leader': {
    ...base, fleet: 2, splits: 5, maxUnits: 1, unitMs: 50, leaseSeconds: 1, rebalanceDelayMs: 50,
    steps: [
      { gapMs: 0, fault: { kind: 'crash', target: 0 } },
      { gapMs: 0, fault: { kind: 'delay', target: 0, latencyMs: 493, durationMs: 1309 } },
      { gapMs: 1137, fault: { kind: 'slow', target: 0, latencyMs: 1, durationMs: 100 } },
      { gapMs: 171, fault: { kind: 'join' } },
      { gapMs: 0, fault: { kind: 'delay', target: 0, latencyMs: 504, durationMs: 316 } },
      { gapMs: 315, fault: { kind: 'leave', target: 49 } },
    ],
  },
  // worker.ts: an orphan adopted on a view lagging the store was fenced at once, came back as an
  // orphan on the same stale view, and was adopted again: a hot loop of reads and fenced writes.
  'an adopted orphan fenced at once is not adopted again on the same view': {
    ...base, fleet: 4, splits: 13, maxUnits: 3, unitMs: 436, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [
      { gapMs: 0, fault: { kind: 'join' } },
      { gapMs: 368, fault: { kind: 'expire', target: 0 } },
      { gapMs: 964, fault: { kind: 'pause', target: 7, tenths: 18 } },
      { gapMs: 179, fault: { kind: 'delay', target: 38, latencyMs: 2971, durationMs: 7303 } },
      { gapMs: 614, fault: { kind: 'slow', target: 58, latencyMs: 685, durationMs: 1577 } },
      { gapMs: 734, fault: { kind: 'pause', target: 24, tenths: 22 } },
      { gapMs: 87, fault: { kind: 'leaderKill' } },
      { gapMs: 753, fault: { kind: 'crash', target: 0 } },
    ],
  },
  // worker.ts: adopting a split of unknown outcome timed out on a slow link, and the retry
  // waited for the view to move; the only other member then left, nothing moved again, and
  // the job never finished (the retry now also comes after a short wait).
  'a failed adoption is retried even when nothing else moves': {
    ...base, fleet: 2, splits: 5, maxUnits: 1, unitMs: 50, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [
      { gapMs: 0, fault: { kind: 'slow', target: 63, latencyMs: 200, durationMs: 673 } },
      { gapMs: 648, fault: { kind: 'leave', target: 2 } },
    ],
  },
  // The same stall, another way: a crash, then slow links on the survivor while it settled
  // the crashed member's split.
  'a failed settling is retried after a crash and slow links': {
    ...base, fleet: 2, splits: 6, maxUnits: 2, unitMs: 301, leaseSeconds: 1, rebalanceDelayMs: 50,
    steps: [
      { gapMs: 884, fault: { kind: 'crash', target: 23 } },
      { gapMs: 69, fault: { kind: 'slow', target: 0, latencyMs: 200, durationMs: 526 } },
      { gapMs: 525, fault: { kind: 'slow', target: 0, latencyMs: 1, durationMs: 100 } },
    ],
  },
  // worker.ts: a lane lost with its session's leases expired at the store was adopted again
  // from a view that events reached late (it still showed the lease key): the adopted lane
  // processed the split in vain while its next owner ran it (replay past the bound). Adoption
  // is now guarded by the split's revision and the lease key at the store.
  'a split is not adopted on a lease key that expired at the store': {
    ...base, fleet: 2, splits: 19, maxUnits: 5, unitMs: 50, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [
      { gapMs: 1275, fault: { kind: 'delay', target: 0, latencyMs: 43, durationMs: 100 } },
      { gapMs: 11, fault: { kind: 'join' } },
      { gapMs: 46, fault: { kind: 'expire', target: 0 } },
      { gapMs: 25, fault: { kind: 'pause', target: 0, tenths: 1 } },
    ],
  },
  // coordinator.ts: with a blanket opTimeoutMs on every store call, a publishing transaction
  // that timed out on a slow link landed after the next step's writes and named a split in
  // two assignment records. Publishing waits for its writes' answers (no blanket deadline).
  'a publishing write is never overtaken by the next step': {
    ...base, fleet: 2, splits: 6, maxUnits: 4, unitMs: 151, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [
      { gapMs: 80, fault: { kind: 'restart', target: 0 } },
      { gapMs: 247, fault: { kind: 'slow', target: 0, latencyMs: 452, durationMs: 100 } },
      { gapMs: 250, fault: { kind: 'leave', target: 0 } },
    ],
  },
  // The operator actions in a schedule: pause at once (before any split ran), evacuate a member,
  // a kill while paused, resume; every property holds and the job completes.
  'operator actions: pause, evacuate, a crash while paused, resume': {
    ...base, fleet: 3, splits: 12, maxUnits: 4, unitMs: 200, leaseSeconds: 1, rebalanceDelayMs: 0,
    steps: [
      { gapMs: 0, fault: { kind: 'operator', action: 'pause', target: 0 } },
      { gapMs: 500, fault: { kind: 'operator', action: 'resume', target: 0 } },
      { gapMs: 300, fault: { kind: 'operator', action: 'evacuate', target: 1 } },
      { gapMs: 400, fault: { kind: 'operator', action: 'pause', target: 0 } },
      { gapMs: 100, fault: { kind: 'crash', target: 0 } },
      { gapMs: 700, fault: { kind: 'operator', action: 'resume', target: 0 } },
      { gapMs: 300, fault: { kind: 'operator', action: 'resumeInstance', target: 1 } },
      { gapMs: 200, fault: { kind: 'operator', action: 'retry', target: 0 } },
    ],
  },
};

/**
 * Slow links only (round trips past opTimeoutMs while writes land), found by sampling the
 * schedule generator for a run in which a landed claim is adopted (the seed re-sampled, 11 → 3,
 * when retry loops took jittered backoff, issue 28: the old seed's timing no longer lost a claim's reply).
 */
// The seed is one whose run loses a claim's reply (seed 3 did until the move rule of decision 0057
// changed who is named what; a search of seeds 0-39 found 26). Claims mostly ride in completions now,
// so a lost claim reply is rarer than a lost lane write.
const LOST_REPLY: Schedule = {
  seed: 26, fleet: 5, splits: 38, maxUnits: 8, commitEvery: 3, unitMs: 182, leaseSeconds: 2, rebalanceDelayMs: 4997,
  drainDeadlineMs: 1752, reconcileIntervalMs: 3986, lanes: [4], drains: ['ignore', 'slow'], restartAtEnd: true,
  steps: [
    { gapMs: 836, fault: { kind: 'slow', target: 0, latencyMs: 562, durationMs: 1168 } },
    { gapMs: 731, fault: { kind: 'slow', target: 1, latencyMs: 327, durationMs: 2303 } },
    { gapMs: 63, fault: { kind: 'slow', target: 2, latencyMs: 651, durationMs: 1119 } },
    { gapMs: 366, fault: { kind: 'slow', target: 3, latencyMs: 272, durationMs: 2558 } },
    { gapMs: 1022, fault: { kind: 'slow', target: 4, latencyMs: 364, durationMs: 1086 } },
    { gapMs: 1294, fault: { kind: 'slow', target: 5, latencyMs: 268, durationMs: 2122 } },
    { gapMs: 1388, fault: { kind: 'slow', target: 6, latencyMs: 426, durationMs: 844 } },
    { gapMs: 560, fault: { kind: 'slow', target: 7, latencyMs: 630, durationMs: 2580 } },
  ],
};

const packedFound: Record<string, Schedule> = {
  // auditor.ts (a fresh-seed run of the random packed schedules, seed -1222501147; the auditor's, not the fleet's):
  // an operator's retry of a quarantined split in a running job puts the plan back as it read it, to fence a
  // verdict decided before it (decision 0058); the auditor took that for a plan written without the leader key.
  'an operator\'s retry puts the plan back unchanged': {"seed":0,"fleet":3,"splits":7,"maxUnits":5,"commitEvery":1,"unitMs":253,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":200,"reconcileIntervalMs":300,"lanes":[1],"prefetch":[0],"drains":["cooperate"],"steps":[{"gapMs":706,"fault":{"kind":"leaderKill"}},{"gapMs":772,"fault":{"kind":"join"}},{"gapMs":188,"fault":{"kind":"pause","target":29,"tenths":10}},{"gapMs":0,"fault":{"kind":"leaderKill"}},{"gapMs":999,"fault":{"kind":"expire","target":0}},{"gapMs":0,"fault":{"kind":"leaderKill"}},{"gapMs":1000,"fault":{"kind":"operator","action":"retry","target":0}}],"restartAtEnd":false,"layout":"packed","waves":4,"waveMs":200,"replanIntervalMs":300,"buckets":1},
  // settle-orphans.ts (defect 38; a fresh-seed hostile hunt, seed 1432504644, its 2,739th schedule): w0 took s-01
  // over from crashed w1; the hostile writer wrote its lease key again with no etcd lease, and its repair deleted
  // it. w0's lane was fenced at its next commit and followed as an orphan; once a read showed nothing of ours
  // there, the settler forgot it, freeing the lane after that pass had decided its claims with the lane spent,
  // and scheduled nothing: with the store quiet from then on, no event and no backstop read woke w0, which never
  // claimed s-01 again, and the job never finished. Forgetting an orphan now reconciles again.
  'a split whose orphan is forgotten is claimed again by its quiet owner': {"seed":2089155025,"fleet":4,"splits":12,"maxUnits":5,"commitEvery":3,"unitMs":789,"leaseSeconds":2,"rebalanceDelayMs":0,"drainDeadlineMs":1681,"reconcileIntervalMs":1306,"lanes":[5,1,3],"prefetch":[0],"drains":["cooperate","slow","cooperate","ignore"],"steps":[{"gapMs":1134,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":287,"fault":{"kind":"crash","target":1}},{"gapMs":10,"fault":{"kind":"hostile","record":"split","mutation":"dead-instance","target":0}},{"gapMs":609,"fault":{"kind":"operator","action":"resumeInstance","target":0}},{"gapMs":1292,"fault":{"kind":"hostile","record":"lease","mutation":"leaseless","target":0}}],"restartAtEnd":true,"layout":"packed","waves":1,"waveMs":200,"replanIntervalMs":2733,"buckets":1},
  // packed-queue.ts (defect 37; a fresh-seed hostile hunt, seed 601762922): folded.2.0 deleted just after the
  // verdict; w1, its events late, was elected in the finished job, listed the page with no folded record and,
  // before it stopped, promoted its folded splits again: runnable records nobody would run, in a job whose
  // verdict says complete. A finished job promotes nothing.
  'a folded record deleted after the verdict promotes nothing again': {"seed":1484855154,"fleet":5,"splits":9,"maxUnits":2,"commitEvery":2,"unitMs":59,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":3217,"reconcileIntervalMs":4990,"lanes":[2,5,4],"prefetch":[1,0,0],"drains":["decline","cooperate","cooperate"],"steps":[{"gapMs":666,"fault":{"kind":"skew","target":36,"latencyMs":5,"durationMs":1451}},{"gapMs":1151,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":299,"fault":{"kind":"hostile","record":"folded","mutation":"delete","target":13}},{"gapMs":0,"fault":{"kind":"skew","target":0,"latencyMs":1,"durationMs":100}},{"gapMs":0,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":0,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":1,"fault":{"kind":"delay","target":36,"latencyMs":2,"durationMs":100}}],"restartAtEnd":true,"layout":"packed","waves":2,"waveMs":1600,"replanIntervalMs":1977,"buckets":8},
  // leader-view.ts, split-columns.ts (defect 36; a fresh-seed hostile hunt, seed 2056508783, once random packed
  // schedules deleted queue pages again): queue.0.1 deleted after its splits were promoted, then the leader
  // killed; the next leader knew those splits by their own records only, which are no pool rows (a packed
  // split's weight and place are its page's), so two runnable ones were never assigned; and counted, they
  // did not make the backstop list the pages again, so the page, once put back, was never read: no verdict.
  // Such page-less splits now count as unaccounted (decision 0078).
  'splits promoted before their page was deleted wait for it and run once it is read': {"seed":1811063605,"fleet":6,"splits":57,"maxUnits":7,"commitEvery":1,"unitMs":723,"leaseSeconds":1,"rebalanceDelayMs":52,"drainDeadlineMs":759,"reconcileIntervalMs":308,"lanes":[4,1,4,2],"prefetch":[2,3],"drains":["cooperate"],"steps":[{"gapMs":1156,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":681,"fault":{"kind":"operator","action":"resume","target":0}},{"gapMs":1099,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":887,"fault":{"kind":"restart","target":0}},{"gapMs":100,"fault":{"kind":"hostile","record":"queue","mutation":"delete","target":33}},{"gapMs":723,"fault":{"kind":"crash","target":54}},{"gapMs":753,"fault":{"kind":"operator","action":"resumeInstance","target":63}},{"gapMs":1081,"fault":{"kind":"hostile","record":"assign","mutation":"delete","target":38,"repairAfterMs":12034}},{"gapMs":77,"fault":{"kind":"hostile","record":"assign","mutation":"deep","target":17,"repairAfterMs":7690}},{"gapMs":1200,"fault":{"kind":"hostile","record":"queue","mutation":"deep","target":29,"repairAfterMs":8736}},{"gapMs":1010,"fault":{"kind":"pause","target":30,"tenths":14}}],"restartAtEnd":false,"layout":"packed","waves":2,"waveMs":3314,"replanIntervalMs":780,"buckets":8},
  // packed-view.ts, packed-pages.ts (defect 35; a fresh-seed hostile hunt and CI's packed seed): folded.1.0 made
  // unreadable (a duplicate key), then queue.1.0 deleted, while no leader ran; the next leader listed neither,
  // seeded the page's splits into a new queue.1.0, and once the folded record was repaired its old bits marked
  // the new page's slots folded (splits lost). An unreadable folded record now takes its page's number too.
  'an unreadable folded record keeps the number of its deleted page': {"seed":26220559,"fleet":2,"splits":20,"maxUnits":7,"commitEvery":2,"unitMs":791,"leaseSeconds":3,"rebalanceDelayMs":54,"drainDeadlineMs":209,"reconcileIntervalMs":303,"lanes":[3,4],"prefetch":[0,3],"drains":["slow","slow","decline"],"steps":[{"gapMs":414,"fault":{"kind":"hostile","record":"publish","mutation":"dead-instance","target":1,"repairAfterMs":12515}},{"gapMs":1473,"fault":{"kind":"hostile","record":"assign","mutation":"leaseless","target":27,"repairAfterMs":17822}},{"gapMs":503,"fault":{"kind":"leaderKill"}},{"gapMs":1200,"fault":{"kind":"hostile","record":"folded","mutation":"duplicate-key","target":63,"repairAfterMs":7647}},{"gapMs":827,"fault":{"kind":"hostile","record":"folded","mutation":"duplicate-key","target":29}},{"gapMs":451,"fault":{"kind":"hostile","record":"queue","mutation":"delete","target":55}},{"gapMs":235,"fault":{"kind":"operator","action":"resumeInstance","target":55}},{"gapMs":1122,"fault":{"kind":"skew","target":51,"latencyMs":330,"durationMs":1483}},{"gapMs":847,"fault":{"kind":"hostile","record":"folded","mutation":"huge","target":31}},{"gapMs":561,"fault":{"kind":"hostile","record":"folded","mutation":"huge","target":29,"repairAfterMs":6554}},{"gapMs":752,"fault":{"kind":"hostile","record":"lease","mutation":"huge","target":60,"repairAfterMs":5665}},{"gapMs":68,"fault":{"kind":"hostile","record":"queue","mutation":"deep","target":22,"repairAfterMs":14214}},{"gapMs":289,"fault":{"kind":"hostile","record":"queue","mutation":"wrong-type","target":18,"repairAfterMs":4299}},{"gapMs":1389,"fault":{"kind":"hostile","record":"assign","mutation":"leaseless","target":28,"repairAfterMs":15618}},{"gapMs":605,"fault":{"kind":"expire","target":58}}],"restartAtEnd":false,"layout":"packed","waves":4,"waveMs":2518,"replanIntervalMs":301,"buckets":2},
  // packed-fold.ts (decision 0076): fold-backs that waited for a batch (a full one, a quiet job, or a second)
  // left a job whose deleted queue page was put back with 11 splits the leader never found again: no
  // verdict for good. Found by a fresh-seed hostile hunt; the waiting was reverted.
  'fold-backs sent as soon as they may: a put-back page is found again and the job finishes': {"seed":1805114194,"fleet":5,"splits":43,"maxUnits":5,"commitEvery":2,"unitMs":88,"leaseSeconds":3,"rebalanceDelayMs":0,"drainDeadlineMs":3991,"reconcileIntervalMs":310,"lanes":[4,4,2],"prefetch":[0],"drains":["decline","cooperate","ignore","slow"],"steps":[{"gapMs":1212,"fault":{"kind":"hostile","record":"progress","mutation":"wrong-type","target":34}},{"gapMs":230,"fault":{"kind":"hostile","record":"folded","mutation":"huge","target":44}},{"gapMs":322,"fault":{"kind":"hostile","record":"spec","mutation":"wrong-type","target":8,"repairAfterMs":5140}},{"gapMs":1021,"fault":{"kind":"pause","target":9,"tenths":19}},{"gapMs":1105,"fault":{"kind":"hostile","record":"folded","mutation":"huge","target":40,"repairAfterMs":19732}},{"gapMs":48,"fault":{"kind":"skew","target":1,"latencyMs":1082,"durationMs":5438}},{"gapMs":449,"fault":{"kind":"leave","target":11}},{"gapMs":141,"fault":{"kind":"delay","target":25,"latencyMs":2049,"durationMs":2212}},{"gapMs":538,"fault":{"kind":"hostile","record":"spec","mutation":"dead-instance","target":30}},{"gapMs":303,"fault":{"kind":"hostile","record":"plan","mutation":"huge","target":41,"repairAfterMs":3594}},{"gapMs":815,"fault":{"kind":"pause","target":61,"tenths":16}},{"gapMs":145,"fault":{"kind":"leaderPause","tenths":23}},{"gapMs":134,"fault":{"kind":"hostile","record":"queue","mutation":"delete","target":8,"repairAfterMs":6091}},{"gapMs":323,"fault":{"kind":"leave","target":57}},{"gapMs":302,"fault":{"kind":"hostile","record":"assign","mutation":"duplicate-key","target":7,"repairAfterMs":10425}},{"gapMs":1103,"fault":{"kind":"hostile","record":"queue","mutation":"wrong-type","target":34,"repairAfterMs":15417}},{"gapMs":1381,"fault":{"kind":"hostile","record":"progress","mutation":"leaseless","target":50,"repairAfterMs":6303}},{"gapMs":569,"fault":{"kind":"hostile","record":"plan","mutation":"newer-minor","target":30,"repairAfterMs":4288}}],"restartAtEnd":true,"layout":"packed","waves":4,"waveMs":1554,"replanIntervalMs":2765,"buckets":1},
  // The packed checker (test/support/packed-invariants.ts), a fresh-seed hostile hunt: a completed split's record
  // deleted by hand after the job's verdict (its split not folded yet) read as a split lost; the verdict stands
  // and nothing runs a finished job's split again (defect 34), so it is what the store forgot, not a loss.
  'a split record deleted after the verdict is not a lost split': {"seed":1375834405,"fleet":2,"splits":50,"maxUnits":5,"commitEvery":3,"unitMs":51,"leaseSeconds":2,"rebalanceDelayMs":2429,"drainDeadlineMs":3995,"reconcileIntervalMs":4990,"lanes":[1,1,3,2],"prefetch":[1,2],"drains":["ignore","ignore","decline"],"steps":[{"gapMs":795,"fault":{"kind":"hostile","record":"folded","mutation":"leaseless","target":23,"repairAfterMs":15499}},{"gapMs":848,"fault":{"kind":"hostile","record":"folded","mutation":"delete","target":27,"repairAfterMs":7359}},{"gapMs":821,"fault":{"kind":"join"}},{"gapMs":855,"fault":{"kind":"hostile","record":"progress","mutation":"dead-instance","target":43,"repairAfterMs":10312}},{"gapMs":1277,"fault":{"kind":"slow","target":42,"latencyMs":729,"durationMs":4434}},{"gapMs":555,"fault":{"kind":"hostile","record":"worker","mutation":"control-chars","target":40,"repairAfterMs":15762}},{"gapMs":580,"fault":{"kind":"hostile","record":"queue","mutation":"wrong-type","target":0,"repairAfterMs":9952}},{"gapMs":1438,"fault":{"kind":"hostile","record":"folded","mutation":"dead-instance","target":25,"repairAfterMs":6011}},{"gapMs":350,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":62,"repairAfterMs":18032}},{"gapMs":726,"fault":{"kind":"hostile","record":"spec","mutation":"delete","target":22}},{"gapMs":1210,"fault":{"kind":"pause","target":12,"tenths":20}},{"gapMs":1131,"fault":{"kind":"hostile","record":"plan","mutation":"huge","target":59,"repairAfterMs":14251}},{"gapMs":1472,"fault":{"kind":"hostile","record":"split","mutation":"delete","target":15,"repairAfterMs":13100}},{"gapMs":469,"fault":{"kind":"pause","target":17,"tenths":30}},{"gapMs":909,"fault":{"kind":"hostile","record":"folded","mutation":"dead-instance","target":61,"repairAfterMs":12210}},{"gapMs":1234,"fault":{"kind":"hostile","record":"folded","mutation":"wrong-type","target":27,"repairAfterMs":17782}}],"restartAtEnd":true,"layout":"packed","waves":3,"waveMs":203,"replanIntervalMs":303,"buckets":2},
  // orphans.ts, settle-orphans.ts (decision 0071): the same on a packed job, whose leader promotes the split
  // again (split record epoch 0, the spec it left put again) while its owner's lease key stands.
  'a lease key whose packed split record was deleted and promoted again is dropped': {"seed": 20261203, "fleet": 3, "splits": 24, "maxUnits": 3, "commitEvery": 1, "unitMs": 200, "leaseSeconds": 2, "rebalanceDelayMs": 0, "drainDeadlineMs": 1000, "reconcileIntervalMs": 1000, "lanes": [2, 3], "drains": ["cooperate"], "steps": [{"gapMs": 3000, "fault": {"kind": "hostile", "record": "split", "mutation": "delete", "target": 1, "repairAfterMs": 3000}}, {"gapMs": 4000, "fault": {"kind": "join"}}], "restartAtEnd": false, "layout": "packed", "buckets": 4, "waves": 2, "waveMs": 2500, "replanIntervalMs": 500} as Schedule,
  // leader-view.ts (decision 0072; the hostile writer's page deletion, after the final plan): queue.0.1 deleted
  // while no leader ran; the next leader's listing lacked it, and a final plan is not planned again, so its
  // splits were known to nobody. Pages are never watched: once put back, nobody read it, and the job never
  // finished. While a final plan counts splits the view does not know, the backstop lists the pages again.
  'a queue page deleted while no leader ran is read once put back': {"seed": 20261203, "fleet": 3, "splits": 24, "maxUnits": 3, "commitEvery": 1, "unitMs": 200, "leaseSeconds": 2, "rebalanceDelayMs": 0, "drainDeadlineMs": 1000, "reconcileIntervalMs": 1000, "lanes": [2, 3], "drains": ["cooperate"], "steps": [{"gapMs": 3000, "fault": {"kind": "leaderKill"}}, {"gapMs": 0, "fault": {"kind": "hostile", "record": "queue", "mutation": "delete", "target": 1}}, {"gapMs": 4000, "fault": {"kind": "join"}}], "restartAtEnd": false, "layout": "packed", "buckets": 4, "waves": 2, "waveMs": 2500, "replanIntervalMs": 500} as Schedule,
  // claiming.ts (prefetch, issue 47): the same race as 'a claim batch spends its lanes while its costs
  // are read', on a packed job: one lane, two splits held.
  'a packed claim batch spends its lanes while its costs are read': {"seed":0,"fleet":3,"splits":13,"maxUnits":3,"commitEvery":1,"unitMs":190,"leaseSeconds":3,"rebalanceDelayMs":50,"drainDeadlineMs":200,"reconcileIntervalMs":300,"lanes":[1],"prefetch":[2],"drains":["cooperate"],"steps":[{"gapMs":51,"fault":{"kind":"leave","target":41}},{"gapMs":280,"fault":{"kind":"leaderKill"}},{"gapMs":669,"fault":{"kind":"slow","target":0,"latencyMs":200,"durationMs":100}},{"gapMs":55,"fault":{"kind":"leaderKill"}},{"gapMs":136,"fault":{"kind":"slow","target":0,"latencyMs":218,"durationMs":5301}},{"gapMs":1085,"fault":{"kind":"leaderKill"}},{"gapMs":345,"fault":{"kind":"restart","target":34}},{"gapMs":387,"fault":{"kind":"leaderPause","tenths":11}},{"gapMs":1133,"fault":{"kind":"crash","target":3}},{"gapMs":559,"fault":{"kind":"slow","target":0,"latencyMs":733,"durationMs":520}}],"restartAtEnd":true,"layout":"packed","waves":1,"waveMs":210,"replanIntervalMs":2081,"buckets":2} as Schedule,
  // packed-queue.ts (fixed: a fold-back waits until no publication of the leader's is in flight or unseen by its
  // view, PublishLoop.settled): a fold-back judged "no assignment record names it" from the leader's view,
  // which holds the leader's own publications only once its watch delivers them. Here the leader w0's
  // events run 1.7 s late: s-2 completes (rev 27); once the operator resumes the job, w0 publishes
  // assign.w0 = [s-2] (rev 35, decided on a view that has not seen the completion), the completion
  // reaches its view a millisecond later, and it folds s-2 back (rev 36) before its own rev 35 has:
  // an assignment record naming a split with no records (shrunk by fast-check, seed 150240230).
  'a split an assignment record names is not folded back': {seed: 0, fleet: 2, splits: 5, maxUnits: 1, commitEvery: 1, unitMs: 215, leaseSeconds: 1, rebalanceDelayMs: 0, drainDeadlineMs: 200, reconcileIntervalMs: 313, lanes: [1], drains: ['cooperate'], steps: [{gapMs: 1021, fault: {kind: 'operator', action: 'pause', target: 0}}, {gapMs: 132, fault: {kind: 'delay', target: 0, latencyMs: 1689, durationMs: 156}}, {gapMs: 559, fault: {kind: 'leave', target: 33}}, {gapMs: 792, fault: {kind: 'pause', target: 0, tenths: 1}}], restartAtEnd: false, layout: 'packed', waves: 3, waveMs: 386, replanIntervalMs: 385},
  // packed-view.ts, leader-view.ts (the hostile writer on queue pages): a leader that lists an unreadable
  // queue page sets its splits aside, and pages are neither watched nor listed again in a term. Here
  // queue.0.0 is garbage from t = 0.5 s to 3.5 s and the leader is killed at 0.6 s: its successor lists the
  // garbage, never reads the repaired page, and the final plan's splits in it stay unknown: no verdict,
  // ever (completion). Found once the fault facade narrowed watches as etcd does (src/testing/faults.ts).
  'a queue page listed unreadable is read again once repaired': {...base, fleet: 2, splits: 12, maxUnits: 2, unitMs: 200, leaseSeconds: 1, rebalanceDelayMs: 0, layout: 'packed', buckets: 2, steps: [{gapMs: 500, fault: {kind: 'hostile', record: 'queue', mutation: 'garbage', target: 0, repairAfterMs: 3000}}, {gapMs: 100, fault: {kind: 'leaderKill'}}, {gapMs: 6000, fault: {kind: 'join'}}]},
  // seeding.ts (the same): an open plan's next planning run took the splits of the unreadable page for new
  // ones and seeded them into a new page of their bucket (queue.0.2, page 0.1 being readable): four
  // splits in two pages, folded in one and queued in the other, so promoted, run and completed again
  // (layout, promotion, completed-once). Seeding now waits until every listed page could be read.
  'the splits of a queue page listed unreadable are not seeded again': {...base, fleet: 2, splits: 10, maxUnits: 2, unitMs: 200, leaseSeconds: 1, rebalanceDelayMs: 0, layout: 'packed', buckets: 1, waves: 3, waveMs: 1000, replanIntervalMs: 300, steps: [{gapMs: 1200, fault: {kind: 'hostile', record: 'queue', mutation: 'garbage', target: 0, repairAfterMs: 5000}}, {gapMs: 100, fault: {kind: 'leaderKill'}}, {gapMs: 6000, fault: {kind: 'join'}}]},
  // split-columns.ts (the hostile writer on a packed job): a packed split whose record is unreadable is
  // parked (out of the pool, its page's location kept), and the count of splits known left parked ones
  // out: the final plan, seeded while split.s-0 was garbage, counted 7 splits of 8 (planned-count). A
  // planned count short of the pages' splits weakens the verdict's guard ("every planned split has a
  // record") and misreports the job (inspect, the summary's `seeded`). Parked packed splits now count.
  'a packed split parked at the final planning run is counted in the plan': {...base, fleet: 2, splits: 8, maxUnits: 8, unitMs: 400, leaseSeconds: 1, rebalanceDelayMs: 0, layout: 'packed', buckets: 2, waves: 2, waveMs: 2000, replanIntervalMs: 300, steps: [{gapMs: 1000, fault: {kind: 'hostile', record: 'split', mutation: 'garbage', target: 0, repairAfterMs: 3000}}, {gapMs: 4000, fault: {kind: 'join'}}]},
  // packed-queue.ts (the hostile writer on a folded record): a new leader listed folded.0.0 as garbage (s-1's
  // bit unknown, so s-1 queued), checked s-1's bit, then awaited the page reads; the record was repaired
  // meanwhile (rev 32, s-1's bit set) and the promotion compared the page at that newer revision: s-1, folded
  // back at rev 22, promoted again and run twice (promote-folded, completed-twice, monotone). The compare now
  // holds the revision as of the bits checked (fast-check, seed of the packed hostile schedules).
  'a folded record that changes while promotion reads its pages fails the promotion': {"seed":803391541,"fleet":4,"splits":5,"maxUnits":2,"commitEvery":1,"unitMs":485,"leaseSeconds":3,"rebalanceDelayMs":0,"drainDeadlineMs":205,"reconcileIntervalMs":360,"lanes":[4,1,1],"drains":["decline"],"steps":[{"gapMs":1058,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":406,"fault":{"kind":"leaderKill"}},{"gapMs":843,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":25,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":1196,"fault":{"kind":"hostile","record":"folded","mutation":"garbage","target":0}},{"gapMs":497,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}}],"restartAtEnd":false,"layout":"packed","waves":3,"waveMs":1657,"replanIntervalMs":2989,"buckets":2},
  // seeding.ts, leader-view.ts (a lost reply, once the fault facade narrowed watches as etcd does): w1's
  // put of queue.0.2 landed (rev 149) on a slow link but its reply timed out; pages are not watched, so
  // every later planning run lost on "queue page 0.2 exists already" and the plan never went final
  // (completion). Seeding now reads a page it finds written into the view, and adopts it when it is its own.
  'a queue page whose reply was lost is adopted, not seeded again forever': {"seed":294385498,"fleet":6,"splits":58,"maxUnits":3,"commitEvery":1,"unitMs":53,"leaseSeconds":1,"rebalanceDelayMs":62,"drainDeadlineMs":3686,"reconcileIntervalMs":4993,"lanes":[4],"drains":["ignore","cooperate","cooperate"],"steps":[{"gapMs":758,"fault":{"kind":"leaderKill"}},{"gapMs":939,"fault":{"kind":"pause","target":62,"tenths":24}},{"gapMs":274,"fault":{"kind":"crash","target":48}},{"gapMs":329,"fault":{"kind":"leave","target":35}},{"gapMs":164,"fault":{"kind":"slow","target":60,"latencyMs":275,"durationMs":1812}},{"gapMs":564,"fault":{"kind":"slow","target":61,"latencyMs":265,"durationMs":2482}}],"restartAtEnd":false,"layout":"packed","waves":4,"waveMs":556,"replanIntervalMs":799,"buckets":1},
  // packed-queue.ts, leader-view.ts (the hostile writer on a folded record): the leader elected while
  // folded.0.0 was unreadable placed its 16 folded splits as queued; the repaired record set the page's bits
  // but not those rows. Each decision named some of them, promotion found them folded, made them completed
  // and published nothing, then waited for the view to move; the job was paused meanwhile and, resumed, the
  // fleet went quiet with the rest of the queue never promoted (completion). A promotion that corrects the
  // view now decides again at once.
  'splits found folded at promotion are decided again at once, not after the view moves': {"seed":1952841692,"fleet":6,"splits":40,"maxUnits":1,"commitEvery":3,"unitMs":55,"leaseSeconds":3,"rebalanceDelayMs":3109,"drainDeadlineMs":1596,"reconcileIntervalMs":3299,"lanes":[3,4],"drains":["ignore"],"steps":[{"gapMs":1000,"fault":{"kind":"expire","target":1}},{"gapMs":654,"fault":{"kind":"slow","target":54,"latencyMs":251,"durationMs":5741}},{"gapMs":95,"fault":{"kind":"hostile","record":"folded","mutation":"wrong-type","target":36}},{"gapMs":42,"fault":{"kind":"operator","action":"pause","target":31}},{"gapMs":346,"fault":{"kind":"leave","target":2}},{"gapMs":319,"fault":{"kind":"hostile","record":"queue","mutation":"newer-minor","target":20,"repairAfterMs":11277}},{"gapMs":1044,"fault":{"kind":"hostile","record":"queue","mutation":"huge","target":58}},{"gapMs":744,"fault":{"kind":"hostile","record":"assign","mutation":"newer-minor","target":44,"repairAfterMs":4282}},{"gapMs":1165,"fault":{"kind":"hostile","record":"worker","mutation":"dead-instance","target":51}},{"gapMs":1063,"fault":{"kind":"hostile","record":"control","mutation":"dead-instance","target":19,"repairAfterMs":10590}},{"gapMs":880,"fault":{"kind":"hostile","record":"folded","mutation":"dead-instance","target":63,"repairAfterMs":14727}},{"gapMs":1203,"fault":{"kind":"hostile","record":"queue","mutation":"deep","target":20,"repairAfterMs":13875}},{"gapMs":931,"fault":{"kind":"hostile","record":"spec","mutation":"dead-instance","target":5,"repairAfterMs":10070}}],"restartAtEnd":false,"layout":"packed","waves":2,"waveMs":2888,"replanIntervalMs":2982,"buckets":1},
  // split-columns.ts (the hostile writer on a packed job's page and split record): the leader read queue.0.0
  // again (listed unreadable) after s-00's spec and its garbage record: s-00 was counted as a spec waiting for
  // its record and as parked, the final plan said 32 splits of 31, and no verdict ever came (completion).
  'a parked packed split whose spec came before its page is counted once': {"seed":1387177486,"fleet":6,"splits":31,"maxUnits":8,"commitEvery":2,"unitMs":258,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":2089,"reconcileIntervalMs":3624,"lanes":[3,3],"drains":["decline","decline"],"steps":[{"gapMs":333,"fault":{"kind":"leaderKill"}},{"gapMs":577,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":970,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0,"repairAfterMs":0}},{"gapMs":606,"fault":{"kind":"hostile","record":"queue","mutation":"dead-instance","target":0}},{"gapMs":1138,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":328,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0,"repairAfterMs":18854}},{"gapMs":835,"fault":{"kind":"expire","target":56}},{"gapMs":658,"fault":{"kind":"hostile","record":"queue","mutation":"duplicate-key","target":57,"repairAfterMs":18157}},{"gapMs":442,"fault":{"kind":"hostile","record":"folded","mutation":"wrong-type","target":3,"repairAfterMs":9784}}],"restartAtEnd":false,"layout":"packed","waves":2,"waveMs":556,"replanIntervalMs":2277,"buckets":1},
  // auditor.ts (not the fleet's): the hostile writer left split.s-34 released but naming an owner (control
  // characters); w1 claimed over it as a takeover of a tenancy that committed nothing and charged an attempt,
  // as the protocol says for the record it read. The auditor judged the claim against the fleet's last record
  // (released: no charge). A claim over a record the writer left is no longer held to the fleet's.
  'a claim over a record the hostile writer left is judged by that record': {"seed":1014367526,"fleet":5,"splits":57,"maxUnits":8,"commitEvery":3,"unitMs":792,"leaseSeconds":2,"rebalanceDelayMs":4992,"drainDeadlineMs":1062,"reconcileIntervalMs":1522,"lanes":[4,2],"drains":["ignore","slow","decline","slow"],"steps":[{"gapMs":367,"fault":{"kind":"leave","target":3}},{"gapMs":708,"fault":{"kind":"hostile","record":"summary","mutation":"garbage","target":0}},{"gapMs":870,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":620,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0,"repairAfterMs":0}},{"gapMs":1391,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":115,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":9,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":44}},{"gapMs":1017,"fault":{"kind":"hostile","record":"split","mutation":"dead-instance","target":0}},{"gapMs":1138,"fault":{"kind":"leave","target":61}},{"gapMs":200,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":862,"fault":{"kind":"hostile","record":"split","mutation":"control-chars","target":6}},{"gapMs":0,"fault":{"kind":"restart","target":0}}],"restartAtEnd":true,"layout":"packed","waves":1,"waveMs":2699,"replanIntervalMs":300,"buckets":4},
  // seeding.ts, write-pipeline.ts (a lost reply, then the hostile writer on that page): the planning run after
  // a timed-out one found queue.1.1 written and unreadable, and its seedPage failed; the failure settled
  // between two races of the pipeline's set and removed itself from it, so Promise.all never saw it, and the
  // run wrote a final plan of 26 splits while the pages held 27 (planned-count). No failure is dropped now.
  'a failed page write in seeding\'s pipeline fails the planning run': {"seed":1051879469,"fleet":3,"splits":27,"maxUnits":1,"commitEvery":2,"unitMs":170,"leaseSeconds":2,"rebalanceDelayMs":0,"drainDeadlineMs":3603,"reconcileIntervalMs":3559,"lanes":[2,3],"drains":["cooperate","slow","slow"],"steps":[{"gapMs":934,"fault":{"kind":"pause","target":0,"tenths":1}},{"gapMs":70,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":994,"fault":{"kind":"slow","target":0,"latencyMs":200,"durationMs":994}},{"gapMs":1369,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":921,"fault":{"kind":"hostile","record":"split","mutation":"garbage","target":0}},{"gapMs":570,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}},{"gapMs":1063,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":17}},{"gapMs":261,"fault":{"kind":"expire","target":0}},{"gapMs":0,"fault":{"kind":"join"}},{"gapMs":0,"fault":{"kind":"hostile","record":"queue","mutation":"garbage","target":0}}],"restartAtEnd":true,"layout":"packed","waves":2,"waveMs":1462,"replanIntervalMs":2991,"buckets":8},
  // leader.ts (defect 26, found on real etcd first; the skew fault and the `leadership` property catch it
  // since): w1, elected after the leader was killed, saw its term's generation bump on the plan watch before
  // its campaign on the leader watch, judged its term by the view's revision, found no leader key past it
  // and deposed itself while the key still named its term. A leader now judges by its key's own watch.
  'a new leader does not depose itself when its plan watch runs ahead of its leader watch': {"seed":0,"fleet":2,"splits":5,"maxUnits":1,"commitEvery":1,"unitMs":50,"leaseSeconds":1,"rebalanceDelayMs":50,"drainDeadlineMs":200,"reconcileIntervalMs":501,"lanes":[1],"drains":["cooperate"],"steps":[{"gapMs":0,"fault":{"kind":"leaderKill"}},{"gapMs":136,"fault":{"kind":"delay","target":0,"latencyMs":2,"durationMs":867}},{"gapMs":866,"fault":{"kind":"skew","target":0,"latencyMs":1,"durationMs":100}}],"restartAtEnd":false,"layout":"packed","waves":1,"waveMs":200,"replanIntervalMs":300,"buckets":1},
  // publish.ts (fixed: a lost promotion that taught the view nothing is retried on a timer, not gated on a
  // revision): the leader w2, elected with its events 1.5 s late, promoted five splits (rev 55) while another
  // split of the decision had no place in its view yet, published nothing, and waited for `view.revision` to
  // pass 55. Split records never move that revision (it follows assign, leader, lease and plan), and in a
  // fleet of one idle member nothing else changed: the job stalled for good.
  'a lost promotion is retried, not left waiting for a revision its view never reports': {"seed":1378461483,"fleet":2,"splits":42,"maxUnits":2,"commitEvery":3,"unitMs":56,"leaseSeconds":3,"rebalanceDelayMs":0,"drainDeadlineMs":1035,"reconcileIntervalMs":2385,"lanes":[5],"drains":["cooperate","cooperate"],"steps":[{"gapMs":1007,"fault":{"kind":"slow","target":54,"latencyMs":227,"durationMs":4867}},{"gapMs":1061,"fault":{"kind":"leave","target":18}},{"gapMs":1002,"fault":{"kind":"crash","target":53}},{"gapMs":482,"fault":{"kind":"leaderPause","tenths":15}},{"gapMs":268,"fault":{"kind":"crash","target":49}},{"gapMs":30,"fault":{"kind":"join"}},{"gapMs":1052,"fault":{"kind":"operator","action":"resumeInstance","target":49}},{"gapMs":332,"fault":{"kind":"delay","target":22,"latencyMs":1562,"durationMs":7788}},{"gapMs":22,"fault":{"kind":"slow","target":12,"latencyMs":599,"durationMs":5061}}],"restartAtEnd":false,"layout":"packed","waves":2,"waveMs":200,"replanIntervalMs":300,"buckets":8},
};

describe('the slow link produces the lost-reply case', () => {
  // Issue 11: a claim or a commit whose reply the slow link lost, but which landed, is read back
  // and adopted (the claim: one tenancy, no second claim; the commit: its revision becomes the
  // lane's guard, no LEASE_LOST, no reclaim), and the job completes with every property held.
  test('a claim and commits that landed with their replies lost are adopted, not redone', async () => {
    const coordinators: Coordinator[] = [];
    const r = await runSchedule(LOST_REPLY, {
      inspect: (fleet) => {
        for (const p of fleet.procs) if (p.coordinator) coordinators.push(p.coordinator);
      },
    });
    expect(r.violations).toEqual([]);
    let adopted = 0;
    let landed = 0;
    for (const c of coordinators) {
      for (const v of (await c.metrics.claims.get()).values) if (v.labels.kind === 'adopted' && v.labels.outcome === 'won') adopted += v.value;
      for (const v of (await c.metrics.unknownOutcomes.get()).values) if (v.labels.resolution === 'landed') landed += v.value;
    }
    console.log(`lost-reply schedule: ${adopted} adopted claims, ${landed} lane writes read back as landed`);
    expect(adopted).toBeGreaterThan(0);
    expect(landed).toBeGreaterThan(0);
  });
});

describe('schedules that found defects', () => {
  for (const [name, schedule] of Object.entries(found)) {
    test(name, async () => {
      const r = await runSchedule(schedule);
      expect(r.violations).toEqual([]);
    });
  }
});

describe('the fault facade narrows a watch as etcd does', () => {
  // src/testing/faults.ts dropped a watch's rangeStart and rangeEnd: every simulated watch followed the
  // whole prefix, so a leader's view saw queue pages (which on etcd it never watches) and progress commits.
  test('a watch of one key, and one of a range, deliver only their keys', async () => {
    const clock = new VirtualClock();
    const inner = new MemoryStore({ clock });
    const store = new FaultStore(inner, new FaultClock(clock));
    const key: string[] = [];
    const range: string[] = [];
    // As a worker follows split.{id} (views/follow.ts), and a leader's view the job past its queue pages (leader-ranges.ts).
    store.watch('p/b', { ...exactKey('p/b'), onEvent: (e) => key.push(e.key) });
    store.watch('p/', { rangeStart: 'p/b', rangeEnd: 'p/c', onEvent: (e) => range.push(e.key) });
    for (const k of ['p/a', 'p/b', 'p/bc', 'p/c']) await inner.put(k, '1');
    await flush();
    expect(key).toEqual(['p/b']);
    expect(range).toEqual(['p/b', 'p/bc']);
  });
});

describe('packed schedules that found defects', () => {
  for (const [name, schedule] of Object.entries(packedFound)) {
    test(name, async () => {
      const r = await runSchedule(schedule);
      expect(r.violations).toEqual([]);
    });
  }
});

describe('the auditor catches a broken packed leader', () => {
  // Caught by the packed queue's own property, not merely by a job that fails to finish.
  const property: Record<string, string> = { 'promote-unguarded': 'promotion', 'fold-keeps-spec': 'fold-back' };
  for (const mutant of Object.keys(PACKED_MUTANTS)) {
    test(mutant, async () => {
      const out = await fc.check(
        fc.asyncProperty(packedScheduleArb, async (s) => !(await runSchedule(s, { mutant })).violations.some((v) => v.property === property[mutant])),
        // promote-unguarded is caught at the 1,521st schedule of seed 7 (the 289th before schedules drew a
        // prefetch depth and promotions stopped racing the leader's own fold-backs): a promotion must meet
        // a view that lags the store (a leader change, a hostile write) for a missing guard to matter.
        { numRuns: 2000, seed: 7, endOnFailure: true },
      );
      expect(out.failed).toBe(true);
      console.log(`packed mutant ${mutant}: caught at schedule ${out.numRuns}`);
    }, 600_000); // 1,521 schedules: 120-225 s in CI, beyond 300 s on a machine running two suites
  }
});

// A KNOWN DEFECT the dividing schedules found (issue 49; not fixed yet): a claim whose reply is lost
// under a slow link is counted against the worker's lanes only while its view shows the lease key as
// ours; a view that still shows it as someone else's lets the orphan settler forget it and the worker
// claim another split, and the late claim then lands: three lease keys on two lanes. This test asserts
// the auditor still finds it, so that the fix (settle an uncertain claim on a read that postdates it)
// turns it into a regression that expects no violation.
describe('a claim delayed in flight past its timeout and a later read', () => {
  // settle-orphans.ts (the dividing simulation, issue 49): a slow link held a claim on its way to
  // the store past its timeout; the orphan settler's read-back (sent after the link healed)
  // overtook it and showed the split unclaimed, so the settler forgot it and the worker claimed
  // another split; the first claim then landed: three lease keys on two lanes. A claim of unknown
  // outcome is now forgotten only once the split's record moved past the revision it compared,
  // and sent again meanwhile if the split is still ours to claim (protocol/orphans.ts).
  test('keeps every property (lane-budget)', async () => {
    const s = {"seed":2036333721,"fleet":4,"splits":4,"maxUnits":60,"commitEvery":1,"unitMs":148,"leaseSeconds":1,"rebalanceDelayMs":0,"drainDeadlineMs":207,"reconcileIntervalMs":2325,"lanes":[2,4,5,2],"prefetch":[2],"drains":["decline","ignore","ignore"],"steps":[{"gapMs":1273,"fault":{"kind":"slow","target":20,"latencyMs":706,"durationMs":163}},{"gapMs":235,"fault":{"kind":"leaderKill"}},{"gapMs":426,"fault":{"kind":"pause","target":48,"tenths":12}},{"gapMs":360,"fault":{"kind":"delay","target":12,"latencyMs":2912,"durationMs":421}},{"gapMs":740,"fault":{"kind":"pause","target":4,"tenths":2}},{"gapMs":1368,"fault":{"kind":"operator","action":"evacuate","target":7}},{"gapMs":109,"fault":{"kind":"pause","target":23,"tenths":15}},{"gapMs":1381,"fault":{"kind":"operator","action":"evacuate","target":47}},{"gapMs":253,"fault":{"kind":"operator","action":"evacuate","target":33}}],"restartAtEnd":false,"divide":true} as Schedule;
    const r = await runSchedule(s);
    expect(r.violations).toEqual([]);
  });
});

describe('a claim of unknown outcome sent again takes a free lane only', () => {
  // settle-orphans.ts (CI seed, found by the fix above before it counted lanes): a claim that rode
  // in a completion (decision 0055) shares the completing lane; both had an unknown outcome, and
  // sending the claim again while that lane's lease key still stood held two splits on one lane.
  // A claim is sent again only when a lane is free for it, every other claim that may still land
  // counted. The second schedule (packed) is the same defect on a larger fleet.
  for (const [name, s] of Object.entries({ keys: {"seed":0,"fleet":2,"splits":5,"maxUnits":1,"commitEvery":1,"unitMs":50,"leaseSeconds":1,"rebalanceDelayMs":50,"drainDeadlineMs":200,"reconcileIntervalMs":300,"lanes":[1],"prefetch":[0,1,0],"drains":["cooperate"],"steps":[{"gapMs":0,"fault":{"kind":"crash","target":0}},{"gapMs":0,"fault":{"kind":"slow","target":0,"latencyMs":402,"durationMs":100}},{"gapMs":250,"fault":{"kind":"expire","target":0}}],"restartAtEnd":false}, packed: {"seed":2,"fleet":6,"splits":24,"maxUnits":2,"commitEvery":2,"unitMs":754,"leaseSeconds":2,"rebalanceDelayMs":148,"drainDeadlineMs":3520,"reconcileIntervalMs":3144,"lanes":[2,3,5],"prefetch":[1,0,1],"drains":["decline"],"steps":[{"gapMs":154,"fault":{"kind":"restart","target":62}},{"gapMs":690,"fault":{"kind":"leaderKill"}},{"gapMs":326,"fault":{"kind":"crash","target":9}},{"gapMs":1034,"fault":{"kind":"pause","target":44,"tenths":25}},{"gapMs":405,"fault":{"kind":"leave","target":23}},{"gapMs":997,"fault":{"kind":"pause","target":15,"tenths":1}},{"gapMs":560,"fault":{"kind":"crash","target":53}},{"gapMs":154,"fault":{"kind":"slow","target":11,"latencyMs":601,"durationMs":5047}},{"gapMs":295,"fault":{"kind":"delay","target":9,"latencyMs":146,"durationMs":1032}},{"gapMs":604,"fault":{"kind":"slow","target":13,"latencyMs":101,"durationMs":2615}}],"restartAtEnd":false,"layout":"packed","waves":2,"waveMs":424,"replanIntervalMs":423,"buckets":2} })) {
    test(name, async () => {
      const r = await runSchedule(s as Schedule);
      expect(r.violations).toEqual([]);
    });
  }
});

describe('the auditor catches a broken division', () => {
  // Caught by the divisions' own property (a division without its residual) or by the fence's
  // (a stale owner's division), not merely by a job that fails to finish.
  const property: Record<string, readonly string[]> = { 'division-drops-residual': ['division'], 'division-unfenced': ['one-owner-per-epoch', 'monotone', 'division'] };
  for (const mutant of Object.keys(DIVIDE_MUTANTS)) {
    test(mutant, async () => {
      const out = await fc.check(
        fc.asyncProperty(divideScheduleArb, async (s) => !(await runSchedule(s, { mutant })).violations.some((v) => property[mutant]!.includes(v.property))),
        { numRuns: Number(process.env.SIM_DIVIDE_MUTANT_RUNS ?? 2000), seed: 7, endOnFailure: true },
      );
      expect(out.failed).toBe(true);
      console.log(`division mutant ${mutant}: caught at schedule ${out.numRuns}`);
    }, 300_000);
  }
});

describe('the auditor catches a broken coordinator', () => {
  // Fixed seeds: each run is deterministic, and stops at the first schedule caught.
  for (const mutant of Object.keys(MUTANTS)) {
    test(mutant, async () => {
      const out = await fc.check(
        fc.asyncProperty(scheduleArb, async (s) => (await runSchedule(s, { mutant })).violations.length === 0),
        { numRuns: 600, seed: 7, endOnFailure: true },
      );
      expect(out.failed).toBe(true);
    }, 120_000);
  }
});
