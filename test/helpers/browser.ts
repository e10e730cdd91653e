/**
 * Headless Chromium for the console's tests: Debian's `chromium` (installed by `.ci/run`), driven by
 * playwright-core, with what this machine's closed network needs (no background connections), and axe-core.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** Where the console's screenshots are kept: test artifacts, not committed. */
export const ARTIFACTS = resolve(import.meta.dirname, '../../test-results/console');

export async function launchChromium(): Promise<Browser> {
  const executablePath = CANDIDATES.find((path): path is string => !!path && existsSync(path));
  if (!executablePath)
    throw new Error(
      'Chromium is not installed: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH',
    );
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Saves a full-page screenshot under ARTIFACTS; its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * Where `npm run console:screenshots` keeps the pictures of the console the docs show (`docs/console/`); unset in
 * `npm test`, which takes none of them.
 */
const DOC_SHOTS = process.env.CONSOLE_SCREENSHOTS;

/** The tallest picture, in CSS pixels. */
const DOC_MAX_HEIGHT = 1_000;

/** The laptop's and the phone's widths of the docs' pictures. */
export const DOC_WIDTHS = [1280, 390] as const;

/**
 * Saves `target` (a view, or a part of one) as `<name>-1280.png` and `<name>-390.png` under `CONSOLE_SCREENSHOTS`,
 * the page loaded anew at each width (the pictures are drawn for the width they have); `ready` waits for what the
 * picture must show. Does nothing unless asked for, and leaves the page as wide as it was.
 */
export async function docScreenshots(
  page: Page,
  name: string,
  target: () => Locator,
  ready: () => Promise<unknown> = () => target().waitFor(),
): Promise<void> {
  if (!DOC_SHOTS) return;
  const dir = resolve(DOC_SHOTS);
  mkdirSync(dir, { recursive: true });
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  for (const width of DOC_WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    await page.reload();
    await ready();
    // A long view (many queues on a phone) is cut at `DOC_MAX_HEIGHT`: a picture, not a scroll.
    const box = await target().boundingBox();
    if (!box) throw new Error(`${name}: nothing to take a picture of`);
    await page.screenshot({
      path: join(dir, `${name}-${width}.png`),
      clip: { ...box, height: Math.min(box.height, DOC_MAX_HEIGHT) },
      fullPage: true,
      animations: 'disabled',
    });
  }
  await page.setViewportSize(size);
  await page.reload();
  await ready();
}

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: { target: unknown[]; failureSummary?: string }[];
}

const axeSource = (): string => {
  const require = createRequire(import.meta.url);
  return (require('axe-core') as { source: string }).source;
};

/**
 * The page's serious and critical accessibility violations, by axe-core's WCAG 2 A and AA rules. axe is evaluated
 * through the DevTools protocol, so the page's own Content-Security-Policy stays on.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource());
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run: (context: unknown, options: unknown) => Promise<{ violations: AxeViolation[] }> };
      }
    ).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
