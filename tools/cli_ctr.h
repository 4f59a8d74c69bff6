/* The CTR commands of the hetsage tool (generate --kind ctr, convert --from
 * criteo, train/eval/predict --task ctr). */
#ifndef HS_CLI_CTR_H
#define HS_CLI_CTR_H

#include <stdbool.h>
#include <string.h>

int cmd_generate_ctr(int argc, char **argv);
int cmd_convert_criteo(int argc, char **argv);
int cmd_train_ctr(int argc, char **argv);
int cmd_eval_ctr(int argc, char **argv);
int cmd_predict_ctr(int argc, char **argv);

/* A split of a folder (`name` "train", "valid" or "test"): its text file
 * (NAME.txt, NAME.txt.gz), else, when `arrays`, its array set (from
 * 'convert --from criteo', named by NAME_ids.npy); NULL if none (or no
 * memory). The caller frees it. */
char *cli_ctr_split_file(const char *dir, const char *name, bool arrays);

/* Whether argv asks for the CTR task (--task ctr). */
static inline bool cli_is_ctr(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--task") == 0 && strcmp(argv[i + 1], "ctr") == 0) return true;
  return false;
}

#endif
