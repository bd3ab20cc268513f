# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:

    # Connection options shared by the libcloud_node module and the libcloud inventory plugin.
    DOCUMENTATION = r'''
options:
  provider:
    description:
      - The apache-libcloud compute provider, as the value of a libcloud C(Provider) constant,
        for example V(ec2), V(gce), V(azure_arm), V(openstack) or V(dummy).
      - Providers registered by this collection (such as V(docker)) are accepted too.
    type: str
    required: true
  region:
    description:
      - The region to work in; for V(gce) the zone.
      - When not set, taken from E(AWS_DEFAULT_REGION) or E(AWS_REGION) for V(ec2),
        E(CLOUDSDK_COMPUTE_ZONE) for V(gce), E(OS_REGION_NAME) for V(openstack);
        otherwise the driver default applies.
    type: str
  credentials:
    description:
      - Credentials for the provider. Each key not given here is read from the cloud's standard
        environment variable.
      - V(ec2) keys C(access_key) (E(AWS_ACCESS_KEY_ID)), C(secret_key) (E(AWS_SECRET_ACCESS_KEY)),
        optional C(session_token) (E(AWS_SESSION_TOKEN)).
      - V(gce) keys C(service_account_email) (E(GCE_SERVICE_ACCOUNT_EMAIL)),
        C(credentials_file) (E(GCE_CREDENTIALS_FILE) or E(GOOGLE_APPLICATION_CREDENTIALS)),
        C(project) (E(GCE_PROJECT)).
      - V(azure_arm) keys C(tenant_id) (E(AZURE_TENANT_ID)), C(subscription_id) (E(AZURE_SUBSCRIPTION_ID)),
        C(client_id) (E(AZURE_CLIENT_ID)), C(secret) (E(AZURE_SECRET)).
      - V(openstack) keys C(username) (E(OS_USERNAME)), C(password) (E(OS_PASSWORD)),
        C(auth_url) (E(OS_AUTH_URL)), C(project_name) (E(OS_PROJECT_NAME) or E(OS_TENANT_NAME)),
        optional C(user_domain_name) (E(OS_USER_DOMAIN_NAME)).
      - For any other provider the keys are passed to the libcloud driver constructor as they are.
    type: dict
    default: {}
  driver_options:
    description:
      - Extra keyword arguments for the libcloud driver constructor, overriding the defaults,
        for example C(host), C(port), C(secure) and C(signature_version) to reach an emulated EC2 endpoint.
    type: dict
    default: {}
requirements:
  - apache-libcloud >= 3.8
'''
