/**
 * Import rules for the sources, checked by `npm run lint:deps` (part of `npm test`). Type-only imports count:
 * a cycle through types still ties two modules together.
 */
/** The one declaration of the wire (`sdk-wire-stands-alone`), which the console page may also take. */
const SDK_WIRE = 'sdk/(types|schedule-types|vocabulary|lifecycle-events)\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other, directly or through others, cannot be read or changed apart.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-speaks-no-aws',
      severity: 'error',
      comment:
        'Operations speak in the scheduler terms: stores and queues come through the context, wired in functions/wiring.',
      from: { path: '^functions/core/' },
      to: { path: ['^functions/(adapters|wiring|http)/', '^node_modules/@aws-sdk/'] },
    },
    {
      name: 'domain-stands-alone',
      severity: 'error',
      comment:
        'The domain (states, rules, shapes) imports nothing of the operations, the stores or AWS; of the SDK, only the wire it declares (types, schedule types, vocabulary, lifecycle events, push frames).',
      from: { path: '^functions/domain/' },
      to: {
        path: [
          '^functions/(core|adapters|wiring|http)/',
          '^node_modules/@aws-sdk/',
          '^sdk/(?!(types|schedule-types|vocabulary|lifecycle-events|push-channel)\\.ts$)',
        ],
      },
    },
    {
      name: 'sdk-stands-alone',
      severity: 'error',
      comment: 'The SDK is installed by agents: it depends on nothing but the platform.',
      from: { path: '^sdk/' },
      to: { path: ['^functions/', '^infra/', '^node_modules/'] },
    },
    {
      name: 'sdk-wire-stands-alone',
      severity: 'error',
      comment:
        'sdk/types.ts (with sdk/schedule-types.ts), sdk/vocabulary.ts and sdk/lifecycle-events.ts are the one declaration of the wire: the server, the console page and the SDK take them, so they take nothing but each other, and a page that bundles them bundles only their constants.',
      from: { path: `^${SDK_WIRE}` },
      to: { pathNot: `^${SDK_WIRE}` },
    },
    {
      name: 'console-page-stands-alone',
      severity: 'error',
      comment:
        'The console page runs in a browser: it is bundled from its own files, with no package and no server code. Of the SDK it takes the wire only: the records as the SDK types them (sdk/types.ts, sdk/schedule-types.ts, sdk/lifecycle-events.ts) and the priorities and statuses it declares (sdk/vocabulary.ts).',
      from: { path: '^console/app/' },
      to: { pathNot: `^(console/app/|${SDK_WIRE})` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|cdk\\.out|\\.agent-scheduler)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
