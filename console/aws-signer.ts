/**
 * Operator requests to a deployed stack (and the console's reads of its metrics from CloudWatch), signed with AWS
 * Signature Version 4 by AWS's own signer, with credentials from the standard chain: environment, shared config and
 * credentials files (profiles, SSO), container and instance roles (or the credentials given: `agent-scheduler dev
 * --iam` signs with its own key).
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import { SignatureV4 } from '@smithy/signature-v4';
import { awsSigV4 } from '#sdk/sigv4';

type Credentials = ConstructorParameters<typeof SignatureV4>[0]['credentials'];

export const iamSigner = (region: string, credentials: Credentials = fromNodeProviderChain()) =>
  awsSigV4(new SignatureV4({ service: 'execute-api', region, credentials, sha256: Sha256 }));

/** The same, for CloudWatch (`monitoring`): the console's charts of a deployed stack read its metrics. */
export const monitoringSigner = (region: string, credentials: Credentials = fromNodeProviderChain()) =>
  awsSigV4(new SignatureV4({ service: 'monitoring', region, credentials, sha256: Sha256 }));
