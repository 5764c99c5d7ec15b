import type { BrowserContext, Page } from 'playwright-core';

/** Bounded waits in the browser: generous for 2 busy CPUs. */
export const UI_MS = 15_000;

/**
 * A new page of the demo chat at `url`, joined to `room` as `user`, once it
 * shows the chat and `connected`. Page errors and console errors go to
 * `errors` (but Chromium's own line for each refused WebSocket attempt while
 * a gateway restarts: the page itself logs nothing).
 */
export async function joinChat(
  context: BrowserContext,
  url: string,
  user: string,
  errors: string[],
  options: { room?: string; viewport?: { width: number; height: number }; initScript?: string } = {},
): Promise<Page> {
  const page = await context.newPage();
  if (options.viewport) await page.setViewportSize(options.viewport);
  if (options.initScript) await page.addInitScript(options.initScript);
  page.on('pageerror', (err) => errors.push(`${user}: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/^WebSocket connection to .* failed/.test(msg.text()))
      errors.push(`${user}: ${msg.text()}`);
  });
  await page.goto(url);
  await page.fill('#user', user);
  await page.fill('#room', options.room ?? 'lobby');
  await page.click('#join button[type=submit]');
  await page.waitForSelector('#chat:not([hidden])', { timeout: UI_MS });
  await page.waitForSelector('#status[data-status="connected"]', { timeout: UI_MS });
  return page;
}

/** Type `text` in the composer and send it. */
export async function sendChat(page: Page, text: string): Promise<void> {
  await page.fill('#text', text);
  await page.click('#composer button[type=submit]');
}

/** The member list entry of `user` with presence `status`, or a `:not(...)` of it. */
export const member = (user: string, status: string): string =>
  `#members li[data-user="${user}"]${status.startsWith(':') ? status : `[data-status="${status}"]`}`;
/** Any presence but `offline` (active, or "away" once the activity window passed). */
export const ONLINE = ':not([data-status="offline"])';
