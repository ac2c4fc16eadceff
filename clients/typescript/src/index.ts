/**
 * A thin, typed client for the contextfold HTTP service.
 *
 * Types come from the service's OpenAPI document (`openapi.json`, generated into
 * `schema.d.ts` by openapi-typescript); this file only adds `fetch` calls. Every error is a
 * {@link ContextFoldError} carrying the RFC 9457 problem and its stable `code`.
 */
import type { components } from "./schema.js";

export type Schemas = components["schemas"];
export type Message = Schemas["MessageIn"];
export type AppendResponse = Schemas["AppendResponse"];
export type ContextResponse = Schemas["ContextResponse"];
export type SummaryResponse = Schemas["SummaryResponse"];
export type MessagesPage = Schemas["MessagesPage"];
export type LedgerResponse = Schemas["LedgerResponse"];
export type FoldResult = Schemas["FoldResult"];
export type UsageResponse = Schemas["UsageResponse"];
export type UsageTotals = Schemas["UsageTotals"];
export type SessionSettings = Schemas["SessionSettings"];
export type MaskingSettings = Schemas["MaskingSettings"];
/** Observation masking's options as you send them: each one left out takes its default. */
export type MaskingOptions = Partial<MaskingSettings>;
/**
 * What {@link ContextFoldClient.putSettings} takes; every field optional (left out: the server
 * default). `masking`: its options turn observation masking on (`true`: the defaults),
 * `false` or `null` turn it off; left out, it is on for `preset: "agent"` and off otherwise.
 */
export type SettingsPatch = Omit<Schemas["SettingsPatch"], "masking"> & {
  masking?: MaskingOptions | boolean | null;
};
export type StoredMessage = Schemas["StoredMessageOut"];
export type SessionsPage = Schemas["SessionsPage"];
export type SearchResponse = Schemas["SearchResponse"];
export type SearchHit = Schemas["SearchHitOut"];
export type Problem = Schemas["Problem"];
export type ProblemCode = Problem["code"];
export type ContextFormat = ContextResponse["format"];

/** The first words of every stand-in: a tool result that masking shows as key facts. */
export const STAND_IN_PREFIX = "[contextfold: older tool result, shown as key facts";

/**
 * The stored seq of the whole result a context message stands in for: a masked result's
 * stand-in, or an elided (cut) result's marker; `null` for a message shown whole. Fetch
 * the whole result with {@link ContextFoldClient.storedMessage}.
 */
export function storedSeqOf(message: { content?: unknown }): number | null {
  const text = typeof message.content === "string" ? message.content : "";
  const found = text.startsWith(STAND_IN_PREFIX)
    ? /the full result is stored as seq (\d+)\]/.exec(text)
    : /tokens elided by contextfold; whole message stored as seq (\d+)/.exec(text);
  return found ? Number(found[1]) : null;
}

/** An error answer of the service: `status`, the stable `code`, and the whole problem. */
export class ContextFoldError extends Error {
  readonly status: number;
  readonly code: ProblemCode | "network_error";
  readonly problem: Problem | undefined;
  /** Seconds to wait before retrying (429, 503), from `Retry-After`. */
  readonly retryAfter: number | undefined;

  constructor(status: number, code: ProblemCode | "network_error", message: string,
              problem?: Problem, retryAfter?: number) {
    super(message);
    this.name = "ContextFoldError";
    this.status = status;
    this.code = code;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

export interface ClientOptions {
  /** Base URL of `contextfold serve`, e.g. `http://127.0.0.1:8765`. */
  baseUrl: string;
  /** The API key (`contextfold keys create --tenant NAME`). Leave it out only for a local
   * `contextfold serve --dev`, which answers requests without a key as the tenant `dev`. */
  apiKey?: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds (default 30 000). */
  timeoutMs?: number;
}

export interface SearchOptions {
  /** Most hits (1 to 100, default 20). */
  limit?: number;
  /** Only folded (`true`) or only live (`false`) messages; left out, both. */
  folded?: boolean;
}

export interface ContextOptions {
  system?: string;
  format?: ContextFormat;
  maxTokens?: number;
  /** Recall folded turns matching this text (the answer's `recalled` lists their seqs). */
  query?: string;
}

export class ContextFoldClient {
  private readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Append messages as one atomic batch; messages with an `id` are idempotent. */
  append(sessionId: string, messages: Message[]): Promise<AppendResponse> {
    return this.request("POST", this.session(sessionId, "/messages"), { messages });
  }

  /** The bounded context to send to the model (`format`: openai, anthropic or gemini). */
  context(sessionId: string, options: ContextOptions = {}): Promise<ContextResponse> {
    const body = { system: options.system ?? null, format: options.format ?? "openai",
                   max_tokens: options.maxTokens ?? null, query: options.query ?? null };
    return this.request("POST", this.session(sessionId, "/context"), body);
  }

  summary(sessionId: string): Promise<SummaryResponse> {
    return this.request("GET", this.session(sessionId, "/summary"));
  }

  /** Stored messages, oldest first; pass `next_after_seq` back as `afterSeq`. */
  messages(sessionId: string, options: { afterSeq?: number; limit?: number;
                                         includeFolded?: boolean } = {}): Promise<MessagesPage> {
    const query = new URLSearchParams();
    if (options.afterSeq !== undefined) query.set("after_seq", String(options.afterSeq));
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    if (options.includeFolded !== undefined) {
      query.set("include_folded", String(options.includeFolded));
    }
    return this.request("GET", this.session(sessionId, "/messages", query));
  }

  /** One stored message by seq, whole (the seqs a context's `elided`, `omitted_seqs` and
   * stand-ins name); `null` if there is none (a folded message under delete retention). */
  async storedMessage(sessionId: string, seq: number): Promise<StoredMessage | null> {
    const page = await this.messages(sessionId, { afterSeq: seq - 1, limit: 1 });
    const found = page.messages[0];
    return found !== undefined && found.seq === seq ? found : null;
  }

  /** Full-text search of the session's stored messages, best first: any of the words of `q`
   * matches (stop words aside); each hit has its seq, role, timestamp, snippet and score. */
  search(sessionId: string, q: string, options: SearchOptions = {}): Promise<SearchResponse> {
    const query = new URLSearchParams({ q });
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    if (options.folded !== undefined) query.set("folded", String(options.folded));
    return this.request("GET", this.session(sessionId, "/search", query));
  }

  ledger(sessionId: string, limit?: number): Promise<LedgerResponse> {
    const query = new URLSearchParams();
    if (limit !== undefined) query.set("limit", String(limit));
    return this.request("GET", this.session(sessionId, "/ledger", query));
  }

  /** Fold now if the policy says so; `force` folds all it safely can. 409 while one runs. */
  fold(sessionId: string, force = false): Promise<FoldResult> {
    return this.request("POST", this.session(sessionId, "/fold"), { force });
  }

  /** Record the provider-reported input tokens of the last model call. */
  recordUsage(sessionId: string, inputTokens: number): Promise<UsageResponse> {
    return this.request("POST", this.session(sessionId, "/usage"), { input_tokens: inputTokens });
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.request("DELETE", this.session(sessionId, ""));
  }

  getSettings(sessionId: string): Promise<SessionSettings> {
    return this.request("GET", this.session(sessionId, "/settings"));
  }

  /** Set the session's policy, preset and masking; fields left out take the server
   * defaults. Invalid settings are a 422 and change nothing. */
  putSettings(sessionId: string, settings: SettingsPatch): Promise<SessionSettings> {
    return this.request("PUT", this.session(sessionId, "/settings"), settings);
  }

  /** One page of your sessions, most recently active first. */
  listSessions(options: { limit?: number; cursor?: string | null } = {}): Promise<SessionsPage> {
    const query = new URLSearchParams();
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    if (options.cursor) query.set("cursor", options.cursor);
    return this.request("GET", `/v1/sessions${query.size ? `?${query}` : ""}`);
  }

  /** Every session, page by page. */
  async *allSessions(pageSize = 100): AsyncGenerator<Schemas["SessionInfo"]> {
    let cursor: string | null = null;
    do {
      const page: SessionsPage = await this.listSessions({ limit: pageSize, cursor });
      yield* page.sessions;
      cursor = page.next_cursor;
    } while (cursor);
  }

  usage(): Promise<UsageTotals> {
    return this.request("GET", "/v1/usage");
  }

  private session(sessionId: string, suffix: string, query?: URLSearchParams): string {
    const q = query && query.size ? `?${query}` : "";
    return `/v1/sessions/${encodeURIComponent(sessionId)}${suffix}${q}`;
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.apiKey !== undefined) headers.Authorization = `Bearer ${this.apiKey}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ContextFoldError(0, "network_error", `request failed: ${String(error)}`);
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    if (!response.ok) {
      let problem: Problem | undefined;
      try {
        problem = JSON.parse(text) as Problem;
      } catch {
        problem = undefined;
      }
      const retry = response.headers.get("retry-after");
      throw new ContextFoldError(
        response.status,
        problem?.code ?? "internal_error",
        problem ? `${problem.title}: ${problem.detail ?? ""}` : `HTTP ${response.status}`,
        problem,
        retry === null ? undefined : Number(retry),
      );
    }
    return JSON.parse(text) as T;
  }
}
