// Fails when the committed generated types differ from what openapi.json generates now.
import { readFileSync } from "node:fs";
const [committed, fresh] = process.argv.slice(2);
if (readFileSync(committed, "utf8") !== readFileSync(fresh, "utf8")) {
  console.error(`${committed} is out of date with openapi.json: run \`npm run generate\``);
  process.exit(1);
}
