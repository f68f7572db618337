/**
 * Group commit of survey-response writes: the requests of one organization that arrive while its
 * writes are in flight are written together, in one pass of the write's steps (`insertGroup`,
 * store.ts): one tombstone check, one identity lookup, one claim, one mark, one INSERT and one
 * check after it for the group, instead of one set per request. Each request still gets its own
 * answer: its count, its 400, or the group's 503.
 *
 * A group holds whole requests whose ids are disjoint, in arrival order: a request that shares an
 * id with one taken into the group, or with one it leaves waiting, waits for the next group, so
 * two requests with a common id are written in the order they arrived (as the per-id locks of
 * store.ts order them across groups in flight). Up to `maxInFlight` groups per organization run
 * at once until they send their INSERT (one by default: under load, the requests that arrive
 * during a group's statements are the next group, and the fewer groups, the fewer statements and
 * parts; a group's INSERT and the check after it run beside the next group's first steps, so the
 * engine has two statements to run on its two cores); a request
 * that arrives with fewer in flight starts at once (no delay is added to a lone request). A group takes every
 * request waiting, up to MAX_GROUP_RECORDS records.
 */
import type { EncodedRows } from './encode.ts';
import type { ResponseRecord } from './record.ts';

/** Groups of one organization written at once, by default. */
const GROUPS_IN_FLIGHT = 1;
/** Records of one group (whole requests; a request alone may hold more, up to its own limit). */
const MAX_GROUP_RECORDS = 10_000;

interface Waiting {
  records: readonly ResponseRecord[];
  encoded: EncodedRows | undefined;
  ids: readonly string[];
  resolve: (count: number) => void;
  reject: (err: unknown) => void;
}

/** What a group write gets besides its records. */
export interface GroupContext {
  /** Per request, its rows as encoded at arrival (when the caller encoded them). */
  encoded: readonly (EncodedRows | undefined)[];
  /**
   * Called once the group sends its INSERT (its identities agreed, its slices marked): the next
   * group of the org may start its steps
   * (the per-id locks of store.ts still order it after this one where they share ids).
   */
  released: () => void;
}

/** Writes one group (records of disjoint requests): per request its count or its 400. */
export type WriteGroup = (orgId: string, batches: readonly (readonly ResponseRecord[])[], context: GroupContext) => Promise<Array<number | Error>>;

export class ResponseWriteQueue {
  /** org (lower case) -> requests waiting, in arrival order. */
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly write: WriteGroup,
    private readonly maxInFlight = GROUPS_IN_FLIGHT,
  ) {}

  /** Resolves with the number of records written once the request's group is committed and checked. */
  submit(orgId: string, records: readonly ResponseRecord[], encoded?: EncodedRows): Promise<number> {
    const org = orgId.toLowerCase();
    const ids = [...new Set(records.map((r) => r.id.toLowerCase()))];
    return new Promise<number>((resolve, reject) => {
      let queue = this.waiting.get(org);
      if (!queue) this.waiting.set(org, (queue = []));
      queue.push({ records, encoded, ids, resolve, reject });
      this.pump(orgId, org);
    });
  }

  private pump(orgId: string, org: string): void {
    for (;;) {
      const queue = this.waiting.get(org);
      if (!queue || queue.length === 0) {
        this.waiting.delete(org);
        return;
      }
      const running = this.inFlight.get(org) ?? 0;
      if (running >= this.maxInFlight) return;
      const group = takeGroup(queue);
      this.inFlight.set(org, running + 1);
      let done = false;
      const released = () => {
        if (done) return;
        done = true;
        const left = (this.inFlight.get(org) ?? 1) - 1;
        if (left === 0) this.inFlight.delete(org);
        else this.inFlight.set(org, left);
        this.pump(orgId, org);
      };
      void this.run(orgId, group, released).finally(released);
    }
  }

  private async run(orgId: string, group: Waiting[], released: () => void): Promise<void> {
    try {
      const outcomes = await this.write(orgId, group.map((w) => w.records), { encoded: group.map((w) => w.encoded), released });
      group.forEach((w, i) => {
        const outcome = outcomes[i];
        if (outcome instanceof Error) w.reject(outcome);
        else w.resolve(outcome);
      });
    } catch (err) {
      for (const w of group) w.reject(err);
    }
  }
}

/**
 * Takes the group out of the queue (see the header): the first request always, then each later
 * one whose ids meet none taken or left before it, while the records fit.
 */
function takeGroup(queue: Waiting[]): Waiting[] {
  const group: Waiting[] = [];
  const seen = new Set<string>();
  let records = 0;
  const left: Waiting[] = [];
  for (const w of queue) {
    const fits = group.length === 0 || records + w.records.length <= MAX_GROUP_RECORDS;
    const disjoint = w.ids.every((id) => !seen.has(id));
    if (fits && disjoint) {
      group.push(w);
      records += w.records.length;
    } else {
      left.push(w);
    }
    for (const id of w.ids) seen.add(id);
  }
  queue.splice(0, queue.length, ...left);
  return group;
}
