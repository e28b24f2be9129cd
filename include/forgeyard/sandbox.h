/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: umbrella header. */
#ifndef FORGEYARD_SANDBOX_H
#define FORGEYARD_SANDBOX_H

#include "fy-common.h"
#include "fy-version.h"
#include "fy-error.h"
#include "fy-caps.h"
#include "fy-policy.h"
#include "fy-prepared.h"
#include "fy-result.h"
#include "fy-handle.h"
#include "fy-qualify.h"
#include "fy-observe.h"
#include "fy-image.h"
#include "fy-action.h"
#include "fy-shells.h"
#include "fy-jobnet.h"

#endif
