// What a newcomer runs first: the README's quick start, against a local
// `contextfold serve --dev`, exactly as written; and a clear error when the server
// cannot start.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { serve, type Served } from "./server.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");  // dist/test -> package

describe("onboarding", () => {
  let served: Served;
  before(async () => { served = await serve({ dev: true }); });
  after(async () => { await served.stop(); });

  test("the README shows the quick start exactly as the file that runs", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const source = readFileSync(join(ROOT, "examples", "quickstart.ts"), "utf8");
    assert.ok(readme.includes("```ts\n" + source + "```"),
              "README.md's quick start differs from examples/quickstart.ts");
  });

  test("the quick start folds a chat against `contextfold serve --dev`, no key", () => {
    const env: NodeJS.ProcessEnv = { ...process.env, CONTEXTFOLD_URL: served.url };
    delete env.CONTEXTFOLD_KEY;
    const run = spawnSync(process.execPath, [join(ROOT, "dist", "examples", "quickstart.js")],
                          { env, encoding: "utf8", timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    const used = /context: (\d+) of 600 tokens, (\d+) messages/.exec(run.stdout);
    assert.ok(used, run.stdout);
    assert.ok(Number(used[1]) <= 600 && Number(used[2]) >= 4, run.stdout);
    const version = /summary \(version (\d+)\):\n(.+)/.exec(run.stdout);
    assert.ok(version && Number(version[1]) >= 1, run.stdout);
    assert.match(version[2], /restaurant \d+/i);
  });
});

test("the built package holds every file its types import", () => {
  // what `npm pack` ships (files: dist/src): index.d.ts imports ./schema.js's types
  const types = readFileSync(join(ROOT, "dist", "src", "index.d.ts"), "utf8");
  const imported = [...types.matchAll(/from "\.\/([\w.-]+)\.js"/g)].map((m) => m[1]);
  assert.ok(imported.includes("schema"));
  for (const name of imported) {
    assert.ok(existsSync(join(ROOT, "dist", "src", `${name}.d.ts`)), `dist/src/${name}.d.ts`);
  }
});

test("a server that cannot start shows what it printed", async () => {
  const folder = mkdtempSync(join(tmpdir(), "contextfold-ts-fake-"));
  const fake = join(folder, "python");
  writeFileSync(fake, "#!/bin/sh\necho \"No module named contextfold (from the fake)\" >&2\n" +
                      "exit 1\n");
  chmodSync(fake, 0o755);
  await assert.rejects(serve({ python: fake, timeoutMs: 20_000 }), (error: Error) => {
    assert.match(error.message, /exited with 1/);
    assert.match(error.message, /No module named contextfold \(from the fake\)/);
    assert.match(error.message, /CONTEXTFOLD_PYTHON/);
    return true;
  });
});
