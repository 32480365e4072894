"""The clouds' credentials and endpoints: AWS (Bedrock), Google Cloud (Vertex AI), Azure OpenAI.

- `aws` (`_aws`): Bedrock's region, credentials (a bearer token, or botocore's chain) and
  SigV4 signing; botocore is imported only when needed.
- `gcp` (`_gcp`): an express-mode key or Application Default Credentials for Vertex AI;
  google-auth is imported only when needed.
- `_azure`: Azure OpenAI's endpoint, key or Entra token, and content-filter text (its names
  below).

AWS and Google Cloud are exported as modules, since their names (`access`, `Access`,
`require_credentials`) mean the same for each.
"""

from . import _aws as aws
from . import _gcp as gcp
from ._azure import (
    AZURE_PROVIDER,
    azure_base_url,
    azure_headers,
    filter_results,
    filter_text,
    is_azure,
    is_azure_host,
    is_entra_token,
)

__all__ = [
    "AZURE_PROVIDER",
    "aws",
    "azure_base_url",
    "azure_headers",
    "filter_results",
    "filter_text",
    "gcp",
    "is_azure",
    "is_azure_host",
    "is_entra_token",
]
