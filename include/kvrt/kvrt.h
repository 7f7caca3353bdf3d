/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/*
 * kvrt.h — the umbrella header: include this one.
 */
#ifndef KVRT_KVRT_H
#define KVRT_KVRT_H

#include "kvrt/common.h"
#include "kvrt/cache.h"
#include "kvrt/model.h"
#include "kvrt/context.h"
#include "kvrt/ced.h"
#include "kvrt/process.h"

#endif /* KVRT_KVRT_H */
