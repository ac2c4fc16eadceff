// Quick start: a conversation folds into a summary while its context stays within budget.
// Start the service first (no API key needed with --dev, 127.0.0.1 only):
//   pip install "contextfold[server]" && contextfold serve --dev --db quickstart.db
import { ContextFoldClient } from "@contextfold/client";

const memory = new ContextFoldClient({
  baseUrl: process.env.CONTEXTFOLD_URL ?? "http://127.0.0.1:8765",
  apiKey: process.env.CONTEXTFOLD_KEY, // not needed with --dev; else `contextfold keys create`
});
const session = `trip-${Date.now()}`;

// fold when the context would exceed 600 tokens; keep the last 4 messages word for word
await memory.putSettings(session, { budget: 600, keep_last: 4 });

for (let day = 1; day <= 20; day++) {
  await memory.append(session, [
    { role: "user", content: `Day ${day}: I booked a table at restaurant ${day} in Lisbon.`,
      id: `user-${day}` },   // an id makes a retried append store nothing twice
    { role: "assistant", content: `Restaurant ${day} is booked for day ${day}.`,
      id: `assistant-${day}` },
  ]);
}

// the service folds in the background, off the request path: wait for the first fold
let { summary } = await memory.summary(session);
for (let tries = 0; summary === null && tries < 50; tries++) {
  await new Promise((resolve) => setTimeout(resolve, 200));
  ({ summary } = await memory.summary(session));
}
console.log(`summary (version ${summary?.version}):\n${summary?.text}`);

const context = await memory.context(session, { system: "You are a travel assistant." });
console.log(`context: ${context.tokens} of ${context.budget} tokens, ` +
            `${context.messages.length} messages`);   // send context.messages to your model
