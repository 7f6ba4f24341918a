/**
 * Ephemeral keys (substrate.md, "Hostile records"): a presence key
 * (`worker.{instance}`) and a split's lease key (`lease.{id}`) say that a
 * process is alive only because they live on its etcd lease and vanish with
 * it. One put by hand, by a tool or by a restore carries no lease and would
 * never vanish: it is not live. It neither makes an instance a member nor
 * blocks a claim, and a claim compares "no lease" (absent, or present
 * without one: `cmp.noLease`) rather than "absent", so it can write over it.
 */

/** Whether a key is attached to an etcd lease (the `Store` contract reports none as undefined; etcd's wire form is '0'). */
export function hasLease(kv: { readonly lease?: string }): boolean {
  return kv.lease !== undefined && kv.lease !== '' && kv.lease !== '0';
}

/** The message a key of an ephemeral kind with no lease is reported with (once per key, as an unreadable record is). */
export function leaselessProblem(key: string, kind: 'worker' | 'lease'): string {
  const what = kind === 'worker' ? 'a presence key makes its instance a member' : 'a lease key holds its split';
  return `${key} has no etcd lease (put by hand, by a tool or by a restore?): ${what} only while it lives on its process's lease, so it is ignored (and written over)`;
}
