#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
// Drive a flame graph SVG in a real headless Chromium (Debian's chromium via
// playwright-core): hover, click a frame to zoom, reset, search, bad regex.
// Prints one JSON object with what the page showed; t/55-browser.t asserts
// on it.  Usage:
//   node t/browser/flamegraph.js SVG OUTDIR ZOOM_FRAME SIBLING_FRAME REGEX
// ZOOM_FRAME / SIBLING_FRAME: full frame names (the text of <title> before
// " ("); screenshots go to OUTDIR/{initial,zoomed,search}.png.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");

const root = path.resolve(__dirname, "../..");
const pwPath = process.env.PLAYWRIGHT_CORE ||
  path.join(root, "build/node/node_modules/playwright-core");
const { chromium } = require(pwPath);

const [svg, outdir, zoomName, siblingName, regex] = process.argv.slice(2);
if (!regex) {
  console.error("usage: flamegraph.js SVG OUTDIR ZOOM_FRAME SIBLING_FRAME REGEX");
  process.exit(2);
}

// Geometry and state of every frame, read from the live DOM.
function snapshot() {
  const out = [];
  for (const g of document.querySelectorAll("#frames > g")) {
    const title = g.querySelector("title").textContent;
    const r = g.querySelector("rect");
    const t = g.querySelector("text");
    const style = getComputedStyle(g);
    out.push({
      name: title.substring(0, title.lastIndexOf(" (")),
      title,
      x: parseFloat(r.getAttribute("x")),
      w: parseFloat(r.getAttribute("width")),
      y: parseFloat(r.getAttribute("y")),
      fill: r.getAttribute("fill"),
      label: t ? t.textContent : null,
      hidden: style.display === "none",
      parent: g.classList.contains("parent"),
    });
  }
  return {
    frames: out,
    unzoomHidden: getComputedStyle(document.getElementById("unzoom")).display === "none",
    matched: document.getElementById("matched").textContent,
    details: document.getElementById("details").textContent,
    searchLabel: document.getElementById("search").textContent,
  };
}

(async () => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "stapxx-chromium-"));
  const errors = [];
  const requests = [];
  const dialogs = [];
  const result = { errors, requests, dialogs };
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
      "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync",
    ],
    viewport: { width: 1300, height: 900 },
  });
  try {
    // Only the file itself may load: anything else is a network access.
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("file:")) return route.continue();
      requests.push(url);
      return route.abort();
    });
    const page = context.pages()[0] || (await context.newPage());
    page.on("pageerror", (e) => errors.push("pageerror: " + e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push("console: " + m.text());
    });
    let nextAnswer = null;
    page.on("dialog", async (d) => {
      dialogs.push(d.type() + ": " + d.message());
      if (d.type() === "prompt" && nextAnswer !== null) await d.accept(nextAnswer);
      else await d.dismiss();
    });
    await page.goto("file://" + path.resolve(svg), { waitUntil: "load" });
    result.initial = await page.evaluate(snapshot);
    await page.screenshot({ path: path.join(outdir, "initial.png") });

    const frameBox = async (name) => {
      const boxes = await page.evaluate((name) => {
        for (const g of document.querySelectorAll("#frames > g")) {
          const t = g.querySelector("title").textContent;
          if (t.substring(0, t.lastIndexOf(" (")) === name) {
            const b = g.querySelector("rect").getBoundingClientRect();
            return { x: b.x, y: b.y, w: b.width, h: b.height };
          }
        }
        return null;
      }, name);
      if (!boxes) throw new Error("no frame named '" + name + "'");
      return boxes;
    };

    // Hover shows the frame's details line.
    let b = await frameBox(zoomName);
    await page.mouse.move(b.x + b.w / 2, b.y + b.h / 2);
    result.hoverDetails = await page.evaluate(
      () => document.getElementById("details").textContent);

    // Click to zoom.
    await page.mouse.click(b.x + b.w / 2, b.y + b.h / 2);
    result.zoomed = await page.evaluate(snapshot);
    await page.screenshot({ path: path.join(outdir, "zoomed.png") });

    // Reset Zoom (a real click on the button text).
    await page.click("#unzoom");
    result.unzoomed = await page.evaluate(snapshot);

    // Search: the prompt is answered with REGEX.
    nextAnswer = regex;
    await page.click("#search");
    result.searched = await page.evaluate(snapshot);
    await page.screenshot({ path: path.join(outdir, "search.png") });

    // Zoom while searching keeps the highlight; then reset both.
    b = await frameBox(siblingName);
    await page.mouse.click(b.x + b.w / 2, b.y + b.h / 2);
    result.zoomedSibling = await page.evaluate(snapshot);
    await page.click("#search");	// "Reset Search"
    await page.click("#unzoom");
    result.reset = await page.evaluate(snapshot);

    // A regex that does not compile: a message, no exception.
    nextAnswer = "(";
    await page.click("#search");
    result.badRegex = await page.evaluate(snapshot);
    result.zoomName = zoomName;
    result.siblingName = siblingName;
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  // Only summaries of the snapshots are needed by the test; keep all.
  process.stdout.write(JSON.stringify(result) + "\n");
})().catch((e) => {
  console.error("flamegraph.js: error: " + (e && e.stack || e));
  process.exit(1);
});
