/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* No guest agent on this architecture: the VM backend refuses at prepare. */
#include <stddef.h>
const unsigned char vm_agent_blob[1] = {0};
const size_t vm_agent_blob_len = 0;
