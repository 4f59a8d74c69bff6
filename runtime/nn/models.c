/* The list of model tables: the one place a new model kind is added
 * (model_ops.h says what else it brings). */
#include <string.h>

#include "nn/model_ops.h"

extern const hs_model_ops hs__model_sage, hs__model_gcn, hs__model_gat;

static const hs_model_ops *const tables[] = {
    &hs__model_sage,
    &hs__model_gcn,
    &hs__model_gat,
};

const hs_model_ops *hs__model_ops(int kind) {
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if ((int)tables[i]->kind == kind) return tables[i];
  return NULL;
}

const hs_model_ops *hs__model_ops_by_name(const char *name) {
  for (size_t i = 0; name && i < sizeof tables / sizeof tables[0]; i++)
    if (strcmp(tables[i]->name, name) == 0) return tables[i];
  return NULL;
}
