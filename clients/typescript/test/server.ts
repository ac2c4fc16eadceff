// Starts a real `contextfold serve` for the tests (Python with contextfold[server] on PATH,
// or CONTEXTFOLD_PYTHON pointing at that interpreter). If it does not come up, the error
// carries what the server printed (a missing module, a port in use, …).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const PYTHON = process.env.CONTEXTFOLD_PYTHON ?? "python3";

export interface Served {
  url: string;
  key(tenant: string): string;
  stop(): Promise<void>;
}

export interface ServeOptions {
  /** The interpreter to run `-m contextfold.cli serve` with (default: {@link PYTHON}). */
  python?: string;
  /** `contextfold serve --dev`: requests without a key act as the tenant `dev`. */
  dev?: boolean;
  /** How long to wait for /healthz (default 60 s). */
  timeoutMs?: number;
  /** The server's `fold` setting (default: the server's default). `inline` folds inside
   * the append, so its answer carries the fold's outcome. */
  fold?: "inline" | "background" | "deferred";
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

const HINT = "set CONTEXTFOLD_PYTHON to a Python that has `pip install \"contextfold[server]\"`";

export async function serve(options: ServeOptions = {}): Promise<Served> {
  const python = options.python ?? PYTHON;
  const home = mkdtempSync(join(tmpdir(), "contextfold-ts-"));
  const env = { ...process.env, CONTEXTFOLD_HOME: home };
  const port = await freePort();
  const args = ["-m", "contextfold.cli", "serve", "--port", String(port), "--log-level",
                "warning", ...(options.dev ? ["--dev"] : [])];
  if (options.fold !== undefined) {
    const config = join(home, "server.json");
    writeFileSync(config, JSON.stringify({ fold: options.fold }));
    args.push("--config", config);
  }
  const child: ChildProcess = spawn(python, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let spawnError: Error | undefined;
  const keep = (chunk: Buffer) => { output = (output + chunk.toString()).slice(-8000); };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  child.on("error", (error) => { spawnError = error; });
  const failed = (why: string) => new Error(
    `${why} (${python} ${args.join(" ")}); ${HINT}.` +
    (output.trim() ? `\n--- what it printed ---\n${output.trim()}` : ""));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (spawnError !== undefined) throw failed(`could not start: ${spawnError.message}`);
    if (child.exitCode !== null) throw failed(`contextfold serve exited with ${child.exitCode}`);
    if (Date.now() > deadline) {
      child.kill("SIGTERM");
      throw failed("contextfold serve did not answer /healthz in time");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const keys = new Map<string, string>();
  return {
    url,
    key(tenant: string): string {
      if (!keys.has(tenant)) {
        const made = spawnSync(python, ["-m", "contextfold.cli", "keys", "create", "--tenant",
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
