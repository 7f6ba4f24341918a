/**
 * The records a job keeps on the store, as types: one interface per key kind
 * (keys.ts says where each lives, docs/keys.md what each field means), and the
 * schema version they are written under. The codecs are records.ts; the
 * decode rules, field by field, record-schemas.ts.
 *
 * Types and two constants only: no logic.
 */
import type { SplitStatus } from '../split-model.js';
import type { KeyKind } from './keys.js';

/**
 * The schema's major version (`v`), which this build writes and the only one
 * it reads: a record of a newer major is refused. Within a major, records are
 * forward-compatible (docs/decisions/0010-record-versions.md): a newer minor
 * (`minor`) may add optional fields, which this build tolerates and keeps
 * when it rewrites the record.
 */
export const SCHEMA_VERSION = 1;
/** The schema's minor version this build writes (0: it adds nothing to major 1). */
export const SCHEMA_MINOR = 0;

/** Any JSON value: what descriptors, progress and planner cursors may hold. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The split model's statuses (split-model.ts), the record codec's as the engine's. */
export type { SplitStatus };

interface Stamp {
  v: 1;
  fp: string;
  /** The writer's minor version, when above 0 (a newer build). Fields a newer minor adds ride along unread. */
  minor?: number;
}
/** Of a final plan: every split terminal, all completed ('complete') or some quarantined ('stalled'). */
export type JobVerdictRecord = 'complete' | 'stalled';
/**
 * The major version of a packed job's plan record (decision 0037): a build that predates the
 * packed queue must refuse the plan ("newer major") rather than read an empty queue.
 */
export const PACKED_PLAN_VERSION = 2;
/** How a job keeps its splits on the store, fixed when the job is created (decision 0037). */
export type JobLayout = 'keys' | 'packed';
export interface PlanRecord extends Omit<Stamp, 'v'> {
  /** 1 for a `keys` job, PACKED_PLAN_VERSION for a packed one. */
  v: 1 | 2;
  generation: number; final: boolean; planned: number; cursor?: Json;
  /** 'packed' for a packed job (with v 2); absent for the `keys` layout. */
  layout?: 'packed';
  /** A packed job's bucket count (a power of two), chosen when its first splits are seeded; never changed. */
  buckets?: number;
  /** Written by the leader once a final plan's splits are all terminal, so no worker holds the job to know it. */
  verdict?: JobVerdictRecord;
  /**
   * The job's `onJobFinished` hook (decision 0065): 'pending' with the verdict when the leader has
   * one, 'ran' once a leader ran it. The job's processes stay (idle) while it is pending, so a
   * leader that dies running it is replaced by one that runs it again.
   */
  hook?: 'pending' | 'ran';
  /** Names the verdict the hook runs for, the same on every run of it (written with `hook`). */
  hookKey?: string;
}
export interface LeaderRecord extends Stamp { instance: string; generation: number }
/** `publish`: the leader's publication fence; only its revision matters (decision 0015). */
export interface PublishRecord extends Stamp { generation: number }
/** One evacuated instance: the run (its presence nonce) the operator evacuated. A restart is a new run, which is not evacuated. */
export interface Evacuation { instance: string; nonce: string }
/**
 * `control`: what operators asked for (decision 0011). `paused`: the leader publishes empty
 * assignments. `evacuated`: sorted by instance, one entry per instance; each is assigned nothing.
 */
export interface ControlRecord extends Stamp { paused: boolean; evacuated: Evacuation[] }
/**
 * `prefetch` (absent = 0): splits the instance may be named beyond its lanes (substrate.md,
 * "Prefetch"); the leader names up to `maxInFlight + prefetch`. A build that predates it
 * writes none and reads it as a newer minor's field, so a mixed fleet gives such members none.
 */
export interface WorkerRecord extends Stamp { instance: string; maxInFlight: number; prefetch?: number; nonce: string }
/** `parent`: a residual's (decision 0063): the split it was divided from; absent for a planned split. */
export interface SpecRecord extends Stamp { id: string; weight: number; descriptor: Json; generation: number; parent?: string }
/**
 * `owner` is '' when nobody holds the split; `attempts` counts consumed delivery attempts;
 * `notBefore` (epoch ms, set by a failure report) is when a failed split may be claimed again
 * (protocol/retry-policy.ts; a claim clears it).
 */
export interface SplitRecord extends Stamp {
  id: string; epoch: number; status: SplitStatus; owner: string; attempts: number; reason?: string; notBefore?: number;
  /** The wait the failure asked for (ms), beside `notBefore`: a reader waits at most this long from when it saw the record (decision 0060). */
  waitMs?: number;
}
/**
 * `progress.{id}`: the committed progress, and the epoch (tenancy) whose fenced write put it there.
 * The division fields (decision 0063): `done`, the share of the split's current part its handler
 * reported done (0 to 1); after a division, `divisions` (how many landed), `end` (the primary part's
 * end, as the handler gave it) and `weight` (the primary part's weight); `declined`, the division
 * the handler declined in this tenancy (its sequence number).
 */
export interface ProgressRecord extends Stamp {
  id: string; epoch: number; progress: Json;
  done?: number; divisions?: number; end?: Json; weight?: number; declined?: number;
}
export interface LeaseRecord extends Stamp { id: string; owner: string; nonce: string; epoch: number }
/**
 * `summary`: the leader's compact summary of the job (decision 0040), what `jobs` and `inspect`
 * read instead of every split. Counts and summed weights by state: `queued` runnable and
 * unheld, `backoff` runnable, unheld and waiting out a failure's backoff, `held` under a live
 * lease (of which `revoking` no longer assigned to its holder), `completed`, `quarantined`;
 * `parked` splits a record of which cannot be read. Fixed size, whatever the job's.
 */
export interface SummaryRecord extends Stamp {
  generation: number; writtenAt: number;
  planned: number; final: boolean; seeded: number;
  queued: number; queuedWeight: number; backoff: number; backoffWeight: number;
  held: number; heldWeight: number; revoking: number;
  completed: number; completedWeight: number; quarantined: number; quarantinedWeight: number; parked: number;
  members: number; lanes: number;
  /** Residuals of divided splits the leader knows (decision 0063), counted in the states above; absent when none. */
  residuals?: number;
  /** Why part of the job cannot move while the rest does (the leader's health reason, issue 49); absent when all of it can. */
  stuck?: string;
  /** The last notable events the leader saw, oldest first (job-history.ts, decision 0070); absent when none, and in older builds' summaries. */
  history?: StoredHistoryEntry[];
}
/**
 * One entry of a summary's `history` as stored: its revision, when the leader saw it and its kind;
 * the other fields are the kind's (job-history.ts reads the kinds it knows and skips the others).
 */
export interface StoredHistoryEntry { rev: number; at: number; kind: string; [field: string]: Json | undefined }
/**
 * `queue.{bucket}.{page}`: one immutable page of a packed job's queue (decision 0037): up to
 * PAGE_SPLITS splits of one bucket, as parallel arrays (ids unique, each id's bucket the page's).
 */
export interface QueueRecord extends Stamp {
  bucket: number; page: number; generation: number; ids: string[]; weights: number[]; descriptors: Json[];
}
/**
 * `folded.{bucket}.{page}`: the splits of that page folded back as completed, a bitset (base64, bit i of byte i>>3 = slot i).
 * `pageGeneration` is the `generation` of the page the bits are for (decision 0091): a record of another
 * generation marks nothing on the page now under that number. Absent in older builds' records (they apply).
 */
export interface FoldedRecord extends Stamp { bucket: number; page: number; bits: string; pageGeneration?: number }
/** One split's final committed progress as a fold-back kept it: its progress record's `progress` (null when it committed none) and `end` when divided. */
export interface ResultEntry { id: string; progress: Json; end?: Json }
/**
 * `result.{generation}.{seq}`: the final committed progress of the splits one fold-back folded
 * (decision 0069), written in that fold-back's transaction and never rewritten. Ids are unique.
 */
export interface ResultRecord extends Stamp { generation: number; seq: number; splits: ResultEntry[] }
/** `splits` is a sorted (JS string order), duplicate-free array of split ids. */
export interface AssignRecord extends Stamp { instance: string; generation: number; splits: string[] }

/** One division the leader asks for (decision 0063): of split `id` in tenancy `epoch`, its `seq`-th, moving about `share` of what is left. */
export interface DivisionAsk { id: string; epoch: number; seq: number; share: number }
/** `divide.{instance}`: the divisions the leader asks of that instance's running splits, sorted by id. */
export interface DivideRecord extends Stamp { instance: string; generation: number; asks: DivisionAsk[] }

/** Each key kind's record type. */
export interface RecordTypes {
  plan: PlanRecord; leader: LeaderRecord; control: ControlRecord; publish: PublishRecord; worker: WorkerRecord; spec: SpecRecord;
  split: SplitRecord; progress: ProgressRecord; lease: LeaseRecord; assign: AssignRecord; divide: DivideRecord; summary: SummaryRecord;
  queue: QueueRecord; folded: FoldedRecord; result: ResultRecord;
}
export type RecordKind = keyof RecordTypes & KeyKind;
