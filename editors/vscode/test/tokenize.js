// Tokenizes .tl files with the extension's TextMate grammar, as VS Code does (vscode-textmate
// over the Oniguruma regex engine): `node test/tokenize.js FILE...` prints, per file, each
// line's tokens as [start, end, scopes] in JSON.  tests/editors/test_vscode_grammar.py reads it.
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
const onigLib = oniguruma.loadWASM(wasm.buffer).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (s) => new oniguruma.OnigString(s),
}));
const grammarFile = path.join(__dirname, "..", "syntaxes", "tl.tmLanguage.json");
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async (scopeName) =>
    scopeName === "source.tl" ? vsctm.parseRawGrammar(fs.readFileSync(grammarFile, "utf8"), grammarFile) : null,
});

registry.loadGrammar("source.tl").then((grammar) => {
  const out = {};
  for (const file of process.argv.slice(2)) {
    let state = vsctm.INITIAL;
    out[file] = fs.readFileSync(file, "utf8").split("\n").map((line) => {
      const result = grammar.tokenizeLine(line, state);
      state = result.ruleStack;
      return result.tokens.map((t) => [t.startIndex, Math.min(t.endIndex, line.length), t.scopes]);
    });
  }
  process.stdout.write(JSON.stringify(out));
});
