// ESLint for the report pages (tltrace/render/assets/*.js): plain scripts (no modules) that run in a
// browser page under a CSP, plus the pure parts that node's tests require.
// Run by .ci/run ("js lint"); locally: npx eslint@9 tltrace/render/assets
export default [
  {
    files: ["tltrace/render/assets/**/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "script",
      globals: {
        window: "readonly", document: "readonly", location: "readonly", history: "readonly",
        navigator: "readonly", performance: "readonly", setTimeout: "readonly", clearTimeout: "readonly",
        module: "readonly", require: "readonly", Map: "readonly", Set: "readonly", Uint8Array: "readonly", Int32Array: "readonly",
        TLDiff: "readonly", JSON: "readonly", Math: "readonly", MutationObserver: "readonly"
      }
    },
    rules: {
      "no-undef": "error",
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
      "no-redeclare": "error",
      "no-dupe-keys": "error",
      "no-unreachable": "error",
      "no-shadow-restricted-names": "error",
      "no-implicit-globals": "error",
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      "eqeqeq": ["error", "always"],
      "strict": ["error", "function"],
      "no-restricted-properties": ["error",
        { property: "innerHTML", message: "build the DOM with textContent (data never goes through markup)" },
        { property: "outerHTML", message: "build the DOM with textContent" },
        { property: "insertAdjacentHTML", message: "build the DOM with textContent" }
      ]
    }
  }
];
