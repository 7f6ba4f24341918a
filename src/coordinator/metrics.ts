/**
 * Metrics (prom-client), one registry per coordinator unless the user passes
 * their own to expose. Names and meanings are documented in docs/metrics.md.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export class Metrics {
  readonly registry: Registry;
  readonly decisionSeconds: Histogram;
  readonly publishSeconds: Histogram;
  readonly improvingMoves: Counter;
  readonly recordsPublished: Counter;
  readonly recordsRefused: Counter;
  readonly drainDuration: Histogram;
  readonly assignmentLatency: Histogram;
  readonly revocations: Counter<'outcome'>;
  readonly claims: Counter<'kind' | 'outcome'>;
  readonly quarantined: Counter;
  readonly leaderChanges: Counter;
  readonly imbalance: Gauge;
  readonly lanes: Gauge;
  readonly isLeader: Gauge;
  readonly unreadable: Counter<'kind'>;
  readonly parked: Gauge;

  constructor(registry: Registry = new Registry(), labels: Record<string, string> = {}) {
    this.registry = registry;
    if (Object.keys(labels).length > 0) registry.setDefaultLabels(labels);
    const registers = [registry];
    const seconds = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
    this.decisionSeconds = new Histogram({ name: 'splitfleet_decision_seconds', help: 'Time to compute one desired assignment (leader).', buckets: seconds, registers });
    this.publishSeconds = new Histogram({ name: 'splitfleet_publish_seconds', help: 'One publishing step (leader): from deciding to its last assignment write landing.', buckets: seconds, registers });
    this.improvingMoves = new Counter({ name: 'splitfleet_improving_moves_total', help: 'Moves made by the improving pass (leader).', registers });
    this.recordsPublished = new Counter({ name: 'splitfleet_assignment_records_published_total', help: 'assign.{instance} records written (leader).', registers });
    this.recordsRefused = new Counter({ name: 'splitfleet_assignment_records_refused_total', help: 'Assignment records refused because they would exceed the store request limit.', registers });
    this.drainDuration = new Histogram({ name: 'splitfleet_drain_seconds', help: 'From a revocation beginning to the split being released.', buckets: seconds, registers });
    this.assignmentLatency = new Histogram({ name: 'splitfleet_assignment_latency_seconds', help: 'From a split being named in this instance\'s assignment to its claim.', buckets: seconds, registers });
    this.revocations = new Counter({ name: 'splitfleet_revocations_total', help: 'Revocations by outcome: cooperative, forced (deadline) or declined.', labelNames: ['outcome'], registers });
    this.claims = new Counter({ name: 'splitfleet_claims_total', help: 'Claim transactions by kind (create, released, reclaim, expired) and outcome (won, lost).', labelNames: ['kind', 'outcome'], registers });
    this.quarantined = new Counter({ name: 'splitfleet_quarantined_total', help: 'Splits this instance quarantined at max_attempts.', registers });
    this.leaderChanges = new Counter({ name: 'splitfleet_leader_changes_total', help: 'Times this instance became leader.', registers });
    this.imbalance = new Gauge({ name: 'splitfleet_imbalance_ratio', help: 'Max load over its lower bound in the last decision (leader).', registers });
    this.lanes = new Gauge({ name: 'splitfleet_lanes', help: 'Lanes (held splits) open in this instance.', registers });
    this.isLeader = new Gauge({ name: 'splitfleet_is_leader', help: '1 while this instance leads.', registers });
    this.unreadable = new Counter({ name: 'splitfleet_unreadable_records_total', help: 'Records this instance could not read, by kind (each costs only what it concerns: a split, an instance\'s membership or assignment).', labelNames: ['kind'], registers });
    this.parked = new Gauge({ name: 'splitfleet_parked_splits', help: 'Splits set aside because a record of theirs cannot be read (leader): neither assigned nor claimable until repaired.', registers });
  }
}
