// Starts `tlc lsp` (the setting tlc.command) for .tl files: diagnostics as you type, hover,
// go to definition and completion come from the server; highlighting, brackets, indentation
// and snippets from this folder's static files.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("tlc").get("command");
  client = new LanguageClient("tlc", "tlc", { command, args }, { documentSelector: [{ language: "tl" }] });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
