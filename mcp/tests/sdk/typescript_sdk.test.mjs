// `runx mcp serve` against the official TypeScript SDK (`@modelcontextprotocol/sdk` on npm):
// list and call over stdio and over Streamable HTTP.
//
//   cp mcp/tests/sdk/typescript_sdk.test.mjs NPM_PREFIX/ && RUNX_BIN=... RUNX_ROOT=$PWD \
//     node --test NPM_PREFIX/typescript_sdk.test.mjs
// (run from a directory whose node_modules holds the SDK; CI keeps it in target/npm-mcp).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const root = process.env.RUNX_ROOT ?? process.cwd();
const runx = process.env.RUNX_BIN ?? join(root, "target", "release", "runx");
const hello = join(root, "skill-fixtures", "hello");

function receipt(result) {
  const meta = result._meta["runx/receipt"];
  const document = JSON.parse(readFileSync(meta.path, "utf8"));
  assert.equal(document.id, meta.id);
  assert.equal(document.digest, meta.digest);
  assert.equal(document.metadata.evidence.status, meta.status);
  return document.metadata.evidence;
}

async function listAndCall(client) {
  const { tools } = await client.listTools();
  const greet = tools.find((t) => t.name === "hello");
  assert.ok(greet, "hello.greet is listed");
  assert.deepEqual(greet.inputSchema.required, ["name"]);
  assert.equal(greet.inputSchema.additionalProperties, false);
  const result = await client.callTool({ name: "hello", arguments: { name: "Ada" } });
  assert.equal(result.isError, false);
  assert.equal(result.structuredContent.output.greeting, "Hello, Ada.");
  assert.equal(receipt(result).status, "sealed");
  const failed = await client.callTool({ name: "hello", arguments: { name: 7 } });
  assert.equal(failed.isError, true);
  assert.equal(failed._meta["runx/error"].kind, "input");
  assert.equal(failed.structuredContent.runx.status, "failed");
  assert.ok(failed.content[0].text.startsWith("hello failed. Inspect receipt "));
}

test("stdio: list and call", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "runx-mcp-ts-"));
  const transport = new StdioClientTransport({
    command: runx,
    args: ["mcp", "serve", hello],
    env: { REGION: "eu", PATH: process.env.PATH ?? "/usr/bin:/bin" },
    cwd,
    stderr: "ignore",
  });
  const client = new Client({ name: "runx-tests", version: "1.0.0" });
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, "runx");
  await listAndCall(client);
  await client.close();
});

test("Streamable HTTP: list and call", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "runx-mcp-ts-"));
  const server = spawn(runx, ["mcp", "serve", hello, "--listen", "127.0.0.1:0"], {
    cwd,
    env: { ...process.env, REGION: "eu" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    const url = await new Promise((resolve, reject) => {
      const lines = createInterface({ input: server.stderr });
      lines.on("line", (line) => {
        const m = line.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      server.on("exit", (code) => reject(new Error(`runx exited ${code}`)));
    });
    const client = new Client({ name: "runx-tests", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    assert.ok(transport.sessionId, "a session for 2025-11-25");
    await listAndCall(client);
    await client.close();
  } finally {
    server.kill();
  }
});
