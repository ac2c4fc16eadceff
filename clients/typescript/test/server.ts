// Starts a real `contextfold serve` for the tests (Python with contextfold[server] on PATH,
// or CONTEXTFOLD_PYTHON pointing at that interpreter).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PYTHON = process.env.CONTEXTFOLD_PYTHON ?? "python3";

export interface Served {
  url: string;
  key(tenant: string): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port)
                                                                  : reject(new Error("no port"))));
    });
  });
}

export async function serve(): Promise<Served> {
  const home = mkdtempSync(join(tmpdir(), "contextfold-ts-"));
  const env = { ...process.env, CONTEXTFOLD_HOME: home };
  const port = await freePort();
  const child: ChildProcess = spawn(PYTHON, ["-m", "contextfold.cli", "serve", "--port",
                                             String(port)], { env, stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null) throw new Error("contextfold serve exited");
    if (Date.now() > deadline) throw new Error("contextfold serve did not come up");
    await new Promise((r) => setTimeout(r, 100));
  }
  const keys = new Map<string, string>();
  return {
    url,
    key(tenant: string): string {
      if (!keys.has(tenant)) {
        const made = spawnSync(PYTHON, ["-m", "contextfold.cli", "keys", "create", "--tenant",
                                        tenant, "--json"], { env, encoding: "utf8" });
        if (made.status !== 0) throw new Error(`keys create failed: ${made.stderr}`);
        keys.set(tenant, JSON.parse(made.stdout).key);
      }
      return keys.get(tenant)!;
    },
    async stop(): Promise<void> {
      if (child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      });
    },
  };
}
