// Crawlee's PlaywrightCrawler, as its documentation sets it up, crawling
// heed's shell web for the side-by-side comparison in BENCHMARKS.md
// (bench/crawlee/crawlee_test.go runs it and judges the server's log).
//
//   node crawl.mjs SEED_URL [CONCURRENCY] [DELAY_SECONDS]
//
// The browser is Debian's chromium, as heed's. Crawlee's politeness is on:
// robots.txt (respectRobotsTxtFile) and a delay between requests to a
// domain (sameDomainDelaySecs), both of which Crawlee applies to the
// pages it navigates to. It prints a JSON line a page, {"page", "links"},
// as it goes, so that a crawl cut short still says what it did.
import { PlaywrightCrawler, Configuration } from 'crawlee';
import { chromium } from 'playwright-core';

const [seed, concurrency = '2', delay = '0.05'] = process.argv.slice(2);

const crawler = new PlaywrightCrawler({
    launchContext: {
        launcher: chromium,
        launchOptions: { executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true },
    },
    maxConcurrency: Number(concurrency),
    sameDomainDelaySecs: Number(delay),
    respectRobotsTxtFile: true,
    maxRequestRetries: 0,
    requestHandlerTimeoutSecs: 30,
    // Crawlee waits for the load event by default, which a script that
    // never answers (the web's tracker) holds back until the navigation
    // times out: wait for the DOM, then for a quiet network (capped).
    navigationTimeoutSecs: 20,
    preNavigationHooks: [async (_ctx, gotoOptions) => { gotoOptions.waitUntil = 'domcontentloaded'; }],
    async requestHandler({ page, enqueueLinks }) {
        // The DOM as the scripts built it, after the network went quiet.
        await page.waitForLoadState('networkidle', { timeout: 5000 }).catch(() => {});
        const links = await page.$$eval('a[href]', (as) => as.map((a) => a.href));
        console.log(JSON.stringify({ page: page.url(), links }));
        await enqueueLinks({ strategy: 'all' });
    },
}, new Configuration({ persistStorage: false }));

await crawler.run([seed]);
// Crawlee's robots.txt requests have no timeout: those to a host that never
// answers would keep the process alive for ever after the crawl is done.
process.exit(0);
