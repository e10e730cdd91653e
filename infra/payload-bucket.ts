/**
 * The bucket for large payloads: private, encrypted, TLS only, and emptied by a lifecycle rule once no task can
 * need a payload any more. Functions write objects once, read them back, copy one onto itself to keep it for a task
 * that lives long, and delete one whose task succeeded.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { PAYLOAD_OBJECT_PREFIX } from '../functions/adapters/payload-objects';

export interface PayloadBucketProps {
  /**
   * How long after its last write an object may still be read: the longest delay, queue age and retention. A task
   * that lives longer has its object copied onto itself, which S3 dates anew.
   */
  readonly expiration: Duration;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

export class PayloadBucket extends Construct {
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props: PayloadBucketProps) {
    super(scope, id);
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      lifecycleRules: [
        {
          prefix: PAYLOAD_OBJECT_PREFIX,
          expiration: props.expiration,
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
    });
  }

  /** PutObject under the prefix: submitting a task with a large payload. */
  grantWrite(grantee: IGrantable): void {
    this.grantOnObjects(grantee, 's3:PutObject');
  }

  /** DeleteObject under the prefix: a task that succeeded lets go of its payload at once. */
  grantDelete(grantee: IGrantable): void {
    this.grantOnObjects(grantee, 's3:DeleteObject');
  }

  /**
   * GetObject under the prefix: claiming. ListBucket, limited to the prefix, makes a missing (expired) object
   * answer NoSuchKey rather than AccessDenied, so the task is recognised as one that can no longer run.
   */
  grantRead(grantee: IGrantable): void {
    this.grantOnObjects(grantee, 's3:GetObject');
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': `${PAYLOAD_OBJECT_PREFIX}*` } },
      }),
    );
  }

  private grantOnObjects(grantee: IGrantable, action: string): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [action],
        resources: [this.bucket.arnForObjects(`${PAYLOAD_OBJECT_PREFIX}*`)],
      }),
    );
  }
}
