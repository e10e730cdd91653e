/**
 * `cdk.json` carries the feature flags `cdk init` writes for the pinned aws-cdk-lib, so `cdk synth` warns about
 * none, and no flag of CDK v1.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { CDK_CONTEXT } from '../helpers/synth';

const recommended = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('aws-cdk-lib/recommended-feature-flags.json'), 'utf8'),
) as Record<string, unknown>;

describe('cdk.json', () => {
  it('sets every recommended feature flag of the pinned aws-cdk-lib to its recommended value', () => {
    expect(Object.keys(recommended).length).toBeGreaterThan(50);
    expect(CDK_CONTEXT).toMatchObject(recommended);
  });

  it('carries no flag of CDK v1', () => {
    expect(Object.keys(CDK_CONTEXT)).not.toContain('@aws-cdk/core:newStyleStackSynthesis');
    expect(Object.keys(CDK_CONTEXT).filter((flag) => !(flag in recommended))).toEqual([]);
  });
});
