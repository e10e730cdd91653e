/**
 * Payloads in memory, as `payload-table.ts` keeps them: by task and specification, with the `onFailure` beside
 * each; keeping one longer records the time on the fake task store's record, as the adapter does on the state item.
 */
import type * as PayloadPort from '#core/ports/payload-store';
import type { FakeTaskStore } from './fake-task-store';

/** A payload's place: its task and specification, and its layout (a layout 2 item is keyed apart). */
const keyOf = (t: PayloadPort.PayloadOwner) => `${t.taskId}#${t.specHash}${t.payloadListed ? '#listed' : ''}`;

export class FakePayloadStore implements PayloadPort.PayloadStore {
  private readonly payloads = new Map<string, string>();
  private readonly onFailures = new Map<string, string>();

  constructor(private readonly tasks: FakeTaskStore) {}

  async getPayloads(tasks: readonly PayloadPort.PayloadOwner[]): Promise<Map<string, string>> {
    return new Map(
      tasks.flatMap((t) => {
        const json = this.payloads.get(keyOf(t));
        return json === undefined ? [] : [[t.taskId, json] as const];
      }),
    );
  }

  async putPayloads(payloads: readonly PayloadPort.NewPayload[]): Promise<PayloadPort.WrittenPayloads> {
    for (const p of payloads) {
      this.payloads.set(keyOf(p), p.payloadJson);
      if (p.onFailureJson !== undefined) this.onFailures.set(keyOf(p), p.onFailureJson);
    }
    return { inObject: () => false };
  }

  async getOnFailure(task: PayloadPort.PayloadOwner): Promise<string | undefined> {
    return this.onFailures.get(keyOf(task));
  }

  async deletePayloadObject(): Promise<void> {}

  async keepPayload(task: PayloadPort.PayloadHolder, purgeAt: number): Promise<void> {
    await this.tasks.write('keepPayload', task.taskId, (r) => {
      if ((r.task.payloadPurgeAt ?? 0) >= purgeAt) return false;
      r.task = { ...r.task, payloadPurgeAt: purgeAt };
      return true;
    });
  }

  async deletePayload(task: PayloadPort.PayloadOwner): Promise<void> {
    this.payloads.delete(keyOf(task));
    this.onFailures.delete(keyOf(task));
  }
}
