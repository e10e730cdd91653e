/**
 * The first violations found in this process, each with the versions or intervals that make it one, for a
 * report to carry (a run that fails in CI says why without a second run). With `CHAOS_DEBUG` set, each is
 * also printed as found.
 */
export const violationDetails: string[] = [];

export function explain(violation: string, detail: unknown): void {
  const line = `${violation} ${JSON.stringify(detail)}`;
  if (violationDetails.length < 10) violationDetails.push(line.slice(0, 2_000));
  if (process.env.CHAOS_DEBUG) console.error(`violation: ${line}`);
}
