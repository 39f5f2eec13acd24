// A conformance adapter that is "a JavaScript host" as far as numbers go: it runs the command it
// is given (a JSON-lines adapter) and passes every line both ways through JSON.parse and
// JSON.stringify, so every number is re-encoded exactly as a JavaScript runtime writes it
// (2.167957083685233e+16 becomes 21679570836852330; 1.0 becomes 1). With REENCODE_CHANGED set
// to a file name, it appends one line there for every line whose text the re-encoding changed.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [command, ...args] = process.argv.slice(2);
const changedLog = process.env.REENCODE_CHANGED;
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });

function reencode(line) {
  const text = JSON.stringify(JSON.parse(line));
  if (changedLog && text !== line) appendFileSync(changedLog, text + "\n");
  return text + "\n";
}

createInterface({ input: process.stdin }).on("line", (line) => child.stdin.write(reencode(line)));
process.stdin.on("end", () => child.stdin.end());
createInterface({ input: child.stdout }).on("line", (line) => process.stdout.write(reencode(line)));
child.on("exit", (code) => process.exit(code ?? 1));
