import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { PROJECT_ROOT, buildGateway } from './harness/child-gateway';
import { ONLINE as online, UI_MS, joinChat, member, sendChat as send } from './harness/chat-page';
import { describeInChromium, launchChromium, type Browser } from './harness/chromium';

interface GatewayProcess {
  readonly publicPort: number;
  readonly internalPort: number;
  stop(): Promise<unknown>;
}
interface Demo {
  readonly pageUrl: string;
  readonly backend: Server;
  readonly gateway: GatewayProcess;
  stop(): Promise<void>;
}
interface DemoOptions {
  port?: number;
  apiPort?: number;
  backendPort?: number;
  gatewayEnv?: Record<string, string>;
  onLine?: (line: string) => void;
  authTtlSeconds?: number;
}
interface GatewayOptions {
  upstreamUrl: string;
  port: number;
  apiPort: number;
  env?: Record<string, string>;
  onLine?: (line: string) => void;
}
// The demo is plain JavaScript (examples/), started as `npm run demo` starts it, on port 0.
const { startDemo, startGatewayProcess, pageOrigins } = require('../../examples/demo') as {
  startDemo: (options: DemoOptions) => Promise<Demo>;
  startGatewayProcess: (options: GatewayOptions) => Promise<GatewayProcess>;
  pageOrigins: (backendUrl: string) => string;
};

const SCREENSHOT = path.join(PROJECT_ROOT, 'docs', 'demo.png');
/** A one-second activity window: a closed page turns offline within about a second (SPEC §8). */
const GATEWAY_ENV = {
  NEW_CONNECTION_IDLE_TIMEOUT: '1s',
  CLIENT_MAX_IDLE_TIMEOUT: '1s',
  LOG_FORMAT: 'json',
  LOG_LEVEL: 'info',
  SHUTDOWN_GRACE: '1s',
};

/** Authorizations that expire and are renewed (SPEC §14), each renewal a changed identity (`expires_at`). */
const AUTH_TTL_SECONDS = 2;

/**
 * Deliverable 2 of issue 13 in a real Chromium: the demo (`npm run demo`'s
 * startDemo on port 0) serves the chat page; two pages chat, see each other's
 * presence and the unread counter move. UPDATE_SCREENSHOT=1 saves docs/demo.png.
 */
describeInChromium('demo chat page in Chromium', () => {
  let demo: Demo;
  let restarted: GatewayProcess | null = null;
  let browser: Browser;
  const gatewayLog: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    buildGateway(120_000);
    demo = await startDemo({
      port: 0,
      apiPort: 0,
      backendPort: 0,
      gatewayEnv: GATEWAY_ENV,
      onLine: (line) => gatewayLog.push(line),
      authTtlSeconds: AUTH_TTL_SECONDS,
    });
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await restarted?.stop();
    await demo?.stop();
  }, 30_000);

  const open = (user: string, viewport?: { width: number; height: number }): Promise<Page> =>
    joinChat(browser.context, demo.pageUrl, user, pageErrors, { viewport });

  it('lets two pages chat, shows presence and unread counts, survives a gateway restart, and shows a closed page going offline', async () => {
    const alice = await open('alice');
    const bob = await open('bob', { width: 390, height: 740 }); // a phone

    // Presence: both see both online (active, or "away" once the 1 s window passed).
    for (const page of [alice, bob]) {
      await page.waitForSelector(member('alice', online), { timeout: UI_MS });
      await page.waitForSelector(member('bob', online), { timeout: UI_MS });
    }

    await send(alice, 'Hi Bob! Lunch at noon?');
    await bob.locator('#messages .message', { hasText: 'Hi Bob! Lunch at noon?' }).waitFor({ timeout: UI_MS });
    await alice.locator('#messages .message.mine', { hasText: 'Hi Bob! Lunch at noon?' }).waitFor({ timeout: UI_MS });
    await send(alice, 'The usual place.');
    await bob.waitForSelector('#unread[data-count="2"]', { timeout: UI_MS });
    expect(await alice.getAttribute('#unread', 'data-count')).toBe('0'); // the sender has read its own messages

    await bob.click('#unread');
    await bob.waitForSelector('#unread[data-count="0"]', { timeout: UI_MS });
    await send(bob, 'Sounds good, see you there!');
    await alice.locator('#messages .message', { hasText: 'see you there' }).waitFor({ timeout: UI_MS });
    await alice.waitForSelector('#unread[data-count="1"]', { timeout: UI_MS });
    expect(await alice.locator('#messages .message').allTextContents()).toEqual([
      expect.stringContaining('Hi Bob! Lunch at noon?'),
      expect.stringContaining('The usual place.'),
      expect.stringContaining('Sounds good, see you there'),
    ]);

    // The gateway restarts: both pages reconnect by themselves, join again, and the chat goes on.
    const { publicPort, internalPort } = demo.gateway;
    await demo.gateway.stop();
    for (const page of [alice, bob])
      await page.waitForSelector('#status:not([data-status="connected"])', { timeout: UI_MS });
    expect(await bob.getAttribute('#status', 'data-status')).toBe('reconnecting');
    const upstreamUrl = demo.pageUrl.replace(/\/$/, '');
    // The page is served from another port than the WebSocket's: its origin is listed (SPEC §1 same-origin default).
    const env = { ...GATEWAY_ENV, ALLOWED_ORIGINS: pageOrigins(upstreamUrl) };
    restarted = await startGatewayProcess({
      upstreamUrl,
      port: publicPort,
      apiPort: internalPort,
      env,
      onLine: (line) => gatewayLog.push(line),
    });
    // Full-jitter backoff: attempts within 1, 2, 4, 8 s of each other at worst.
    for (const page of [alice, bob])
      await page.waitForSelector('#status[data-status="connected"]', { timeout: 30_000 });
    await alice.waitForSelector(member('bob', online), { timeout: UI_MS });
    await send(bob, 'Back online.');
    await alice.locator('#messages .message', { hasText: 'Back online.' }).waitFor({ timeout: UI_MS });
    await alice.waitForSelector('#unread[data-count="2"]', { timeout: UI_MS });
    expect(await alice.locator('#messages .message').count()).toBe(4); // the history after re-joining added nothing twice

    // The phone-sized page fits its width: nothing scrolls sideways.
    expect(await bob.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);

    if (process.env.UPDATE_SCREENSHOT === '1') {
      mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
      await alice.screenshot({ path: SCREENSHOT });
    }

    await bob.close();
    await alice.waitForSelector(member('bob', 'offline'), { timeout: UI_MS });
    await alice.waitForSelector(member('alice', online), { timeout: UI_MS });
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('shows until when the page is signed in, and each renewal of its authorization (SPEC §14)', async () => {
    const carol = await open('carol');
    await carol.waitForSelector('#identity:not([hidden])', { timeout: UI_MS });
    // Read in this order: a renewal in between only makes the end read later, never earlier.
    const renewals = Number(await carol.getAttribute('#identity', 'data-refreshes'));
    const expiresAt = Number(await carol.getAttribute('#identity', 'data-expires-at'));
    expect(expiresAt).toBeGreaterThan(0);
    // Renewed at about 90% of the 2 s lifetime.
    await carol.waitForSelector(`#identity[data-refreshes="${renewals + 1}"]`, { timeout: UI_MS });
    expect(Number(await carol.getAttribute('#identity', 'data-expires-at'))).toBeGreaterThan(expiresAt);
    expect(await carol.textContent('#identity')).toMatch(/^carol · signed in until \S.* \(renewed ×\d+\)$/);
    await carol.close();
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
