/**
 * How long an idle worker waits between claims: from `min`, doubling at every empty claim up to `max`, and back
 * to `min` as soon as work appears. An idle fleet costs little, and a busy one picks work up at once.
 */
export interface PollInterval {
  /** @default 200 */
  readonly min?: number;
  /** @default 5000 */
  readonly max?: number;
}

export class PollBackoff {
  readonly min: number;
  readonly max: number;
  private current: number;

  constructor(interval: PollInterval = {}) {
    this.min = interval.min ?? 200;
    this.max = interval.max ?? 5_000;
    if (this.min < 0 || this.max < this.min) throw new RangeError('pollIntervalMs needs 0 <= min <= max');
    this.current = this.min;
  }

  /** The wait to use now; the next one is twice as long, up to `max`. */
  next(): number {
    const wait = this.current;
    this.current = Math.min(this.max, Math.max(1, this.current * 2));
    return wait;
  }

  reset(): void {
    this.current = this.min;
  }
}
